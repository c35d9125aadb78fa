/**
 * Checks the user documentation (README.md, CHANGELOG.md, docs/, bench/README.md
 * and the benchmark records): every relative link and anchor resolves, every
 * `make` and `npm run` target a doc names exists, every environment variable
 * a doc names (METALFLOW_*, TEMPORAL_*, IRONIC_*, the stack's) is read somewhere, and the README stays within its length budget.
 * Pure functions over file contents, so test/unit/docs.test.ts can also show
 * them finding a planted fault.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export const README_MAX_LINES = 260;

export interface Problem {
  file: string;
  line: number;
  problem: string;
}

/** The documentation files checked, relative to the repository root. */
export function docFiles(root: string): string[] {
  const md = (dir: string): string[] =>
    existsSync(join(root, dir))
      ? readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
          .filter((f) => f.endsWith('.md'))
          .map((f) => join(dir, f))
      : [];
  return ['README.md', 'CHANGELOG.md', 'bench/README.md', ...md('docs'), ...md('bench/results')].filter((f) => existsSync(join(root, f)));
}

/** The text with fenced code blocks blanked (line numbers kept). */
function withoutFences(text: string): string {
  let inFence = false;
  return text
    .split('\n')
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        inFence = !inFence;
        return '';
      }
      return inFence ? '' : line;
    })
    .join('\n');
}

/** Code: fenced blocks and inline code spans, where commands and variables are named. */
function codeParts(text: string): { line: number; code: string }[] {
  const out: { line: number; code: string }[] = [];
  let inFence = false;
  text.split('\n').forEach((line, i) => {
    if (/^\s*(```|~~~)/.test(line)) {
      inFence = !inFence;
      return;
    }
    if (inFence) out.push({ line: i + 1, code: line });
    else for (const m of line.matchAll(/`([^`]+)`/g)) out.push({ line: i + 1, code: m[1]! });
  });
  return out;
}

/** GitHub's anchors for a Markdown file's headings (duplicates get -1, -2, …). */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of withoutFences(text).split('\n')) {
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const base = h[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(m[1]!);
  return out;
}

/** Broken relative links and anchors in one file; `read` gives another file's text (undefined: none). */
export function linkProblems(file: string, text: string, exists: (path: string) => boolean, read: (path: string) => string | undefined): Problem[] {
  const problems: Problem[] = [];
  withoutFences(text)
    .split('\n')
    .forEach((raw, i) => {
      const line = raw.replace(/`[^`]*`/g, '');
      for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        const target = m[1]!;
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        const [path, anchor] = target.split('#', 2) as [string, string | undefined];
        const to = path === '' ? file : join(dirname(file), decodeURIComponent(path));
        if (!exists(to)) {
          problems.push({ file, line: i + 1, problem: `link to ${target}: ${to} does not exist` });
          continue;
        }
        if (anchor !== undefined && to.endsWith('.md')) {
          const other = read(to);
          if (other !== undefined && !anchors(other).has(anchor)) problems.push({ file, line: i + 1, problem: `link to ${target}: ${to} has no heading #${anchor}` });
        }
      }
    });
  return problems;
}

/** The environment variables of metalflow's processes and scripts, by prefix. */
const VARIABLE = /\b(?:METALFLOW|TEMPORAL|IRONIC|SUSHY|DEMO|DHCP|IPMI_SIM|KUBE_API|ETCD)_[A-Z0-9_]*[A-Z0-9]\b/g;

/** Variables the docs name to say metalflow does not read them. */
const NAMED_AS_NOT_READ = new Set(['TEMPORAL_CONFIG_FILE']);

export interface Known {
  makeTargets: Set<string>;
  npmScripts: Set<string>;
  /** Whether a variable name is read or set anywhere in code, scripts or configuration. */
  variableKnown: (name: string) => boolean;
}

/** `make` / `npm run` targets and METALFLOW_* variables a doc names that do not exist. */
export function nameProblems(file: string, text: string, known: Known): Problem[] {
  const problems: Problem[] = [];
  for (const { line, code } of codeParts(text)) {
    for (const m of code.matchAll(/(?:^|[\s;&|(])make\s+([a-z][\w-]*)/g)) {
      if (!known.makeTargets.has(m[1]!)) problems.push({ file, line, problem: `make ${m[1]}: no such Makefile target` });
    }
    for (const m of code.matchAll(/\bnpm run ([\w:-]+)/g)) {
      if (!known.npmScripts.has(m[1]!)) problems.push({ file, line, problem: `npm run ${m[1]}: no such package.json script` });
    }
  }
  text.split('\n').forEach((l, i) => {
    for (const m of l.matchAll(VARIABLE)) {
      if (!known.variableKnown(m[0]) && !NAMED_AS_NOT_READ.has(m[0])) problems.push({ file, line: i + 1, problem: `${m[0]}: no such variable in config/, the processes, scripts or tests` });
    }
  });
  return problems;
}

/** What exists in the repository: Makefile targets, npm scripts, and the text every variable must appear in. */
export function knownNames(root: string): Known {
  const makefile = readFileSync(join(root, 'Makefile'), 'utf8');
  const makeTargets = new Set([...makefile.matchAll(/^([a-z][\w-]*)\s*:/gm)].map((m) => m[1]!));
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const sources: string[] = [makefile, JSON.stringify(pkg), readFileSync(join(root, 'vitest.config.ts'), 'utf8')];
  const walk = (dir: string): void => {
    const full = join(root, dir);
    if (!existsSync(full)) return;
    for (const f of readdirSync(full, { recursive: true, encoding: 'utf8' })) {
      const p = join(full, f);
      if (/node_modules|fixtures/.test(f) || !/\.(ts|sh|mjs|py|yaml|json)$/.test(f) || !statSync(p).isFile()) continue;
      sources.push(readFileSync(p, 'utf8'));
    }
  };
  for (const dir of ['config', 'model', 'contracts', 'control', 'api', 'workers', 'k8s', 'clients', 'activities', 'workflows', 'scripts', 'bench', 'test/support', 'test/unit', 'test/integration', 'test/k8s', 'test/e2e', 'test/chaos', 'test/bench', 'test/bmc', 'test/dhcp']) walk(dir);
  const all = sources.join('\n');
  const cache = new Map<string, boolean>();
  return {
    makeTargets,
    npmScripts: new Set(Object.keys(pkg.scripts)),
    variableKnown: (name) => {
      if (!cache.has(name)) cache.set(name, new RegExp(`\\b${name}\\b`).test(all));
      return cache.get(name)!;
    },
  };
}

export function checkDocs(root: string): Problem[] {
  const files = docFiles(root);
  const known = knownNames(root);
  const texts = new Map<string, string>();
  const read = (p: string): string | undefined => {
    const rel = relative(root, resolve(root, p));
    if (!texts.has(rel)) {
      const full = join(root, rel);
      texts.set(rel, existsSync(full) && statSync(full).isFile() ? readFileSync(full, 'utf8') : '');
    }
    return texts.get(rel) || undefined;
  };
  const problems: Problem[] = [];
  for (const file of files) {
    const text = read(file) ?? '';
    problems.push(...linkProblems(file, text, (p) => existsSync(join(root, p)), read));
    problems.push(...nameProblems(file, text, known));
  }
  const readmeLines = (read('README.md') ?? '').split('\n').length;
  if (readmeLines > README_MAX_LINES) problems.push({ file: 'README.md', line: readmeLines, problem: `README.md has ${readmeLines} lines; the budget is ${README_MAX_LINES}: move detail into docs/` });
  return problems;
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const problems = checkDocs(join(import.meta.dirname, '..', '..'));
  for (const p of problems) console.log(`${p.file}:${p.line}: ${p.problem}`);
  console.log(problems.length === 0 ? 'docs: no problems' : `docs: ${problems.length} problem(s)`);
  process.exitCode = problems.length === 0 ? 0 : 1;
}
