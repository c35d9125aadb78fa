/**
 * Where the delete phase's time goes between Ironic's power off and the next request about the node, per driver
 * of a run (metalflow, the floor), from the bench's request log (METALFLOW_BENCH_REQUEST_LOG, with answer times)
 * and Ironic's own log (its "Successfully set node … power state to power off" line is when the power off was
 * done). Per node:
 *
 * - watcher wait: power off done → the start of the first watcher read after it (a list of every node, or a
 *   fields-limited GET of the node);
 * - watcher read: that read's start → its answer (its wait in Ironic's API queue and its cost);
 * - turn: the answer → the driver's next request about the node (metalflow: the power activity's end, the host
 *   workflow's task, the delete activity's start and its look-up; the floor: the next call of its loop);
 * - total: power off done → that request.
 *
 * Also the watcher's lists in each phase: the gaps between two lists' starts and each list's time in Ironic, and
 * the requests per kind.
 *
 *   node --import tsx bench/delete-gap.ts <request log> <ironic log> [phase]   (phase: gone, the default)
 */
import { readFileSync } from 'node:fs';
import { readRequestLog, type RequestLogLine } from './support/request-log';


const [logPath, ironicLogPath, phaseArg] = process.argv.slice(2);
if (!logPath || !ironicLogPath) throw new Error('usage: delete-gap.ts <request log> <ironic log> [phase]');
const phase = phaseArg ?? 'gone';

const requests: RequestLogLine[] = readRequestLog(logPath);

/** Ironic's log times are the machine's local time (UTC here), to the millisecond. */
const powerOffDone = new Map<string, number[]>();
const done = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d\.\d+) .*Successfully set node ([0-9a-f-]{36}) power state to power off/;
for (const line of readFileSync(ironicLogPath, 'utf8').split('\n')) {
  const m = done.exec(line);
  if (!m) continue;
  const at = Date.parse(`${m[1]}T${m[2]}Z`);
  powerOffDone.set(m[3]!, [...(powerOffDone.get(m[3]!) ?? []), at]);
}

/** Ironic's provision state moves: node, `from → to`, when (its task manager's "moved to provision state" line). */
const moves: { node: string; step: string; at: number }[] = [];
const moved = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d\.\d+) .*Node ([0-9a-f-]{36}) moved to provision state "([^"]+)" from state "([^"]+)"/;
for (const line of readFileSync(ironicLogPath, 'utf8').split('\n')) {
  const m = moved.exec(line);
  if (m) moves.push({ node: m[3]!, step: `${m[5]} → ${m[4]}`, at: Date.parse(`${m[1]}T${m[2]}Z`) });
}
/** The moves that end Ironic's work on a verb: the driver's next request about the node is its turn. */
const STEPS_DONE = ['verifying → manageable', 'inspecting → manageable', 'inspect wait → manageable'];

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const row = (xs: number[]): string =>
  xs.length === 0 ? '-' : `p50 ${(pct(xs, 50) / 1000).toFixed(1)} s  p90 ${(pct(xs, 90) / 1000).toFixed(1)} s  max ${(Math.max(...xs) / 1000).toFixed(1)} s  (n ${xs.length})`;

const isList = (r: RequestLogLine): boolean => r.method === 'GET' && r.path.startsWith('/v1/nodes?');
const nodeOf = (r: RequestLogLine): string | undefined => /^\/v1\/nodes\/([0-9a-f-]{36})/.exec(r.path)?.[1];
const isFieldsGet = (r: RequestLogLine): boolean => r.method === 'GET' && nodeOf(r) !== undefined && r.path.includes('fields=');

function kind(r: RequestLogLine): string {
  if (isList(r)) return r.path.includes('provision_state=') ? 'list by state' : 'list';
  if (isFieldsGet(r)) return 'GET node (fields)';
  const m = /^\/v1\/nodes\/[^/?]+(\/[^?]*)?/.exec(r.path);
  if (m) return `${r.method} node${m[1] ?? ''}`;
  return `${r.method} ${r.path.split('?')[0]}`;
}

for (const driver of [...new Set(requests.map((r) => r.driver))]) {
  const mine = requests.filter((r) => r.driver === driver).sort((a, b) => a.at - b.at);
  console.log(`\n== ${driver}`);
  for (const p of [...new Set(mine.map((r) => r.phase))]) {
    const inPhase = mine.filter((r) => r.phase === p);
    const lists = inPhase.filter((r) => isList(r) && !r.path.includes('marker='));
    const gaps = lists.slice(1).map((l, i) => l.at - lists[i]!.at);
    const walls = lists.filter((l) => l.answeredAt).map((l) => l.answeredAt! - l.at);
    const kinds: Record<string, number> = {};
    for (const r of inPhase) kinds[kind(r)] = (kinds[kind(r)] ?? 0) + 1;
    console.log(`${p}: ${inPhase.length} requests: ${Object.entries(kinds).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    console.log(`  watcher lists: ${lists.length}; gap between two starts ${row(gaps)}; list start → answer ${row(walls)}`);
  }
  // Ironic done with a step → the driver's next request about the node (not a watcher read), over the whole run.
  const nodes = new Set(mine.map(nodeOf).filter((n) => n !== undefined));
  for (const step of STEPS_DONE) {
    const gaps: number[] = [];
    for (const mv of moves.filter((m) => m.step === step && nodes.has(m.node))) {
      const next = mine.find((r) => r.at >= mv.at && nodeOf(r) === mv.node && !isFieldsGet(r));
      if (next) gaps.push(next.at - mv.at);
    }
    if (gaps.length > 0) console.log(`Ironic's ${step} → next request about the node: ${row(gaps)}`);
  }
  const gone = mine.filter((r) => r.phase === phase);
  const offs = gone.filter((r) => r.method === 'PUT' && r.path.endsWith('/states/power'));
  const parts = { wait: [] as number[], read: [] as number[], turn: [] as number[], total: [] as number[], lookupToDelete: [] as number[] };
  let missing = 0;
  for (const put of offs) {
    const node = nodeOf(put)!;
    const doneAt = (powerOffDone.get(node) ?? []).find((t) => t >= put.at - 1000);
    if (doneAt === undefined) {
      missing++;
      continue;
    }
    const read = gone.find((r) => r.at >= doneAt && r.answeredAt !== undefined && r.status === 200 && ((isList(r) && !r.path.includes('provision_state=')) || (isFieldsGet(r) && nodeOf(r) === node)));
    const next = gone.find((r) => r.at >= doneAt && nodeOf(r) === node && !isFieldsGet(r));
    const del = gone.find((r) => r.method === 'DELETE' && nodeOf(r) === node);
    if (!next) {
      missing++;
      continue;
    }
    parts.total.push(next.at - doneAt);
    if (read && read.answeredAt! <= next.at) {
      parts.wait.push(read.at - doneAt);
      parts.read.push(read.answeredAt! - read.at);
      parts.turn.push(next.at - read.answeredAt!);
    }
    if (del) parts.lookupToDelete.push(del.at - next.at);
  }
  console.log(`${phase}: power offs ${offs.length} (${missing} without Ironic's "done" line or a next request)`);
  console.log(`  power off done → next request about the node: ${row(parts.total)}`);
  console.log(`    done → watcher's next read starts:          ${row(parts.wait)}`);
  console.log(`    that read's start → its answer:              ${row(parts.read)}`);
  console.log(`    answer → next request (the driver's turn):   ${row(parts.turn)}`);
  console.log(`  that request → DELETE sent:                   ${row(parts.lookupToDelete)}`);
}
