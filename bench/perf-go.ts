/**
 * Where a Go process's CPU goes (the Temporal dev server, Temporal server), from a Linux
 * `perf record -g` of it:
 *
 *   perf record -F 49 -g -p <pid> -o temporal.data -- sleep 30
 *   node --import tsx bench/perf-go.ts temporal.data .venv/bin/temporal [--top 25] [--grep 'WorkflowHandler\)\.[A-Z]']
 *
 * The `temporal` CLI ships stripped, so perf names none of its frames; Go keeps its own
 * function table (.gopclntab) in a stripped binary, and `go tool addr2line` reads it. perf
 * prints a frame as an offset into the file; a non-PIE Go binary is mapped at 0x400000.
 * Prints the share of samples per function (self, and inclusive: on the stack at all) and per
 * package, so "a third of the server is ListWorkflowExecutions" is one command.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';

/** A sampled stack, leaf first: a Go frame is an address still to name, any other frame a name. */
export type Frame = { addr: string } | { name: string };

/** The stacks of `perf script -F ip,sym,dso`; frames in `binary` become addresses (offset + base). */
export function parsePerfScript(text: string, binary: string, base = 0x400000n): Frame[][] {
  const samples: Frame[][] = [];
  let stack: Frame[] = [];
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t) {
      if (stack.length > 0) samples.push(stack);
      stack = [];
      continue;
    }
    const m = /^([0-9a-f]+)\s+(.*?)\s*\((.*)\)$/.exec(t);
    if (!m) continue;
    const [, ip, sym, dso] = m as unknown as [string, string, string, string];
    if (basename(dso) === basename(binary)) stack.push({ addr: `0x${(BigInt(`0x${ip}`) + base).toString(16)}` });
    else stack.push({ name: sym && sym !== '[unknown]' ? `[${basename(dso)}] ${sym.replace(/\+0x[0-9a-f]+$/, '')}` : `[${basename(dso)}]` });
  }
  if (stack.length > 0) samples.push(stack);
  return samples;
}

/** The Go package of a function name (`go.temporal.io/server/service/frontend.(*WorkflowHandler).X` -> `…/frontend`). */
export function goPackage(fn: string): string {
  // A frame outside the binary is named `[<dso>] <symbol>`: its package is the dso.
  if (fn.startsWith('[')) return fn.includes('] ') ? fn.slice(0, fn.indexOf('] ') + 1) : fn;
  const slash = fn.lastIndexOf('/');
  const dot = fn.indexOf('.', slash + 1);
  return dot < 0 ? fn : fn.slice(0, dot);
}

export interface Shares {
  samples: number;
  self: Map<string, number>;
  inclusive: Map<string, number>;
  packages: Map<string, number>;
}

/** Counts per function (leaf, and once per stack it is on) and per package, with the addresses named. */
export function shares(samples: Frame[][], names: ReadonlyMap<string, string>): Shares {
  const out: Shares = { samples: samples.length, self: new Map(), inclusive: new Map(), packages: new Map() };
  const add = (m: Map<string, number>, k: string): void => void m.set(k, (m.get(k) ?? 0) + 1);
  for (const stack of samples) {
    const fns = stack.map((f) => ('name' in f ? f.name : (names.get(f.addr) ?? f.addr)));
    if (fns[0]) add(out.self, fns[0]);
    for (const fn of new Set(fns)) add(out.inclusive, fn);
    for (const p of new Set(fns.map(goPackage))) add(out.packages, p);
  }
  return out;
}

function addr2line(binary: string, addrs: string[]): Map<string, string> {
  const go = process.env.GO ?? 'go';
  const r = spawnSync(go, ['tool', 'addr2line', binary], { input: `${addrs.join('\n')}\n`, encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`${go} tool addr2line failed (${r.status}): ${r.stderr || r.error}`);
  const lines = r.stdout.split('\n');
  // Two lines per address: the function, then file:line.
  return new Map(addrs.map((a, i) => [a, lines[i * 2] ?? a]));
}

function main(): void {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '25' }, grep: { type: 'string' } } });
  const [data, binary] = positionals;
  if (!data || !binary) throw new Error('usage: perf-go.ts <perf.data> <go binary> [--top N] [--grep RE]');
  const text = execFileSync('perf', ['script', '-i', data, '-F', 'ip,sym,dso'], { encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] });
  const samples = parsePerfScript(text, binary);
  const addrs = [...new Set(samples.flat().flatMap((f) => ('addr' in f ? [f.addr] : [])))];
  const s = shares(samples, addr2line(binary, addrs));
  const top = Number(values.top);
  const print = (title: string, m: Map<string, number>, n: number): void => {
    console.log(`\n${title} (% of ${s.samples} samples)`);
    for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n)) console.log(`${((100 * v) / s.samples).toFixed(1).padStart(5)}%  ${k}`);
  };
  print('self', s.self, top);
  print('inclusive, by package', s.packages, top);
  print('inclusive, by function', s.inclusive, top);
  if (values.grep) {
    const re = new RegExp(values.grep);
    print(`inclusive, functions matching ${values.grep}`, new Map([...s.inclusive].filter(([k]) => re.test(k))), top);
  }
}

if (process.argv[1] && import.meta.url.endsWith(basename(process.argv[1]))) main();
