/**
 * Where an agent-path run's phases spend their time per host, per driver (metalflow, the floor), from the bench's
 * request log (METALFLOW_BENCH_REQUEST_LOG) and Ironic's own log:
 *
 * - time in each Ironic provision state, summed per node over the phase (from its "moved to provision state"
 *   lines): `clean wait` and `wait call-back` are the agent's boots and Ironic's waits for its heartbeats;
 * - heartbeats Ironic skipped because the node was locked (*will retry on the next heartbeat*), by the state the
 *   node was in, and the waits in `clean wait` or `wait call-back` over a minute: a skipped heartbeat that a step's
 *   end sent leaves the host waiting for the agent's next regular one, 90-180 s later;
 * - the driver's turns: Ironic done with a verb (a move into manageable, available or active, or a power change the
 *   driver asked for done) → the driver's next write about the node; and the last move of the phase → the driver's
 *   first request after it that could have seen it (a read of the node or a list: the node watcher's wait).
 *
 * A node's phase window is from the driver's first request about it in the phase to the driver's last request of
 * the phase (any), so Ironic's moves between phases count in neither.
 *
 *   node --import tsx bench/agent-states.ts <request log> <ironic log>
 */
import { readFileSync } from 'node:fs';
import { readRequestLog, type RequestLogLine } from './support/request-log';


/** Longer than a boot and a step: the agent's next regular heartbeat (90-180 s apart) was awaited. */
const LONG_WAIT_MS = 60_000;
/** Ironic's states where it has finished a verb and waits for the driver's next. */
const RESTING = new Set(['manageable', 'available', 'active']);

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const sec = (ms: number): string => (ms / 1000).toFixed(1).padStart(6);
const row = (xs: number[], n: number): string =>
  xs.length === 0 ? '-' : `mean/host ${sec(xs.reduce((a, b) => a + b, 0) / n)} s  p50 ${sec(pct(xs, 50))} s  p90 ${sec(pct(xs, 90))} s  max ${sec(Math.max(...xs))} s  (n ${xs.length})`;
const nodeOf = (path: string): string | undefined => /^\/v1\/nodes\/([0-9a-f-]{36})/.exec(path)?.[1];
const isWrite = (r: RequestLogLine): boolean => r.method !== 'GET';

export interface Move {
  node: string;
  from: string;
  to: string;
  at: number;
}

/** Ironic's log: provision state moves, power changes done, heartbeats skipped on a locked node. */
export function readIronicLog(text: string): { moves: Move[]; powerDone: { node: string; at: number }[]; skipped: { node: string; at: number }[] } {
  const moves: Move[] = [];
  const powerDone: { node: string; at: number }[] = [];
  const skipped: { node: string; at: number }[] = [];
  const when = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d\.\d+) /;
  for (const line of text.split('\n')) {
    const t = when.exec(line);
    if (!t) continue;
    // Ironic's log times are the machine's local time (UTC here), to the millisecond.
    const at = Date.parse(`${t[1]}T${t[2]}Z`);
    let m = /Node ([0-9a-f-]{36}) moved to provision state "([^"]+)" from state "([^"]+)"/.exec(line);
    if (m) {
      moves.push({ node: m[1]!, to: m[2]!, from: m[3]!, at });
      continue;
    }
    m = /Successfully set node ([0-9a-f-]{36}) power state to power (on|off)/.exec(line);
    if (m) {
      powerDone.push({ node: m[1]!, at });
      continue;
    }
    m = /Node ([0-9a-f-]{36}) is currently locked, skipping heartbeat processing/.exec(line);
    if (m) skipped.push({ node: m[1]!, at });
  }
  return { moves, powerDone, skipped };
}

function main(): void {
  const [logPath, ironicLogPath] = process.argv.slice(2);
  if (!logPath || !ironicLogPath) throw new Error('usage: agent-states.ts <request log> <ironic log>');
  const requests: RequestLogLine[] = readRequestLog(logPath);
  const { moves, powerDone, skipped } = readIronicLog(readFileSync(ironicLogPath, 'utf8'));

  for (const driver of [...new Set(requests.map((r) => r.driver))]) {
    console.log(`\n== ${driver}`);
    const mine = requests.filter((r) => r.driver === driver).sort((a, b) => a.at - b.at);
    for (const phase of [...new Set(mine.map((r) => r.phase))]) {
      const byNode = new Map<string, RequestLogLine[]>();
      for (const r of mine.filter((x) => x.phase === phase)) {
        const node = nodeOf(r.path);
        if (node) byNode.set(node, [...(byNode.get(node) ?? []), r]);
      }
      const n = byNode.size;
      const inPhase = mine.filter((x) => x.phase === phase);
      const phaseEnd = inPhase.at(-1)?.at ?? 0;
      const reads = inPhase.filter((r) => r.method === 'GET' && r.path.startsWith('/v1/nodes'));
      const inState: Record<string, number[]> = {};
      const turns: number[] = [];
      const seen: number[] = [];
      const windows: number[] = [];
      let skips = 0;
      const skipsIn: Record<string, number> = {};
      for (const [node, reqs] of byNode) {
        const from = reqs[0]!.at;
        const to = phaseEnd;
        windows.push(to - from);
        const mv = moves.filter((m) => m.node === node && m.at >= from && m.at <= to);
        mv.forEach((m, i) => {
          const next = mv[i + 1];
          if (next) (inState[m.to] ??= []).push(next.at - m.at);
        });
        for (const sk of skipped.filter((x) => x.node === node && x.at >= from && x.at <= to)) {
          skips++;
          // The state the node was in: the conductor that started a step still holding it (cleaning, deploying: the
          // node then waits in clean wait or wait call-back for the agent's next regular heartbeat), or polling the
          // agent itself for a command's result (deploying: the boot loader, the power off; that skip costs nothing).
          const state = mv.filter((m) => m.at <= sk.at).at(-1)?.to ?? '?';
          skipsIn[state] = (skipsIn[state] ?? 0) + 1;
        }
        // A power change done counts when the driver asked for it: its last write about the node before was a power verb.
        const asked = powerDone.filter((p) => p.node === node && p.at >= from && p.at <= to && reqs.filter((r) => r.at <= p.at && isWrite(r)).at(-1)?.path.endsWith('/states/power'));
        const done = [...mv.filter((m) => RESTING.has(m.to)).map((m) => m.at), ...asked.map((p) => p.at)];
        for (const at of done) {
          const next = reqs.find((r) => r.at >= at && isWrite(r));
          if (next) turns.push(next.at - at);
        }
        const last = mv.at(-1);
        const read = last && reads.find((r) => r.at >= last.at && (nodeOf(r.path) === node || r.path.startsWith('/v1/nodes?')));
        if (last && read) seen.push(read.at - last.at);
      }
      console.log(`${phase}: ${n} nodes; first → last request about a node ${row(windows, n)}`);
      for (const [state, xs] of Object.entries(inState).sort((a, b) => b[1].reduce((s, x) => s + x, 0) - a[1].reduce((s, x) => s + x, 0))) {
        console.log(`  in ${state.padEnd(16)} ${row(xs, n)}`);
      }
      const where = Object.entries(skipsIn).map(([st, c]) => `${c} in ${st}`).join(', ');
      const long = Object.entries(inState)
        .filter(([st]) => st === 'clean wait' || st === 'wait call-back')
        .flatMap(([, xs]) => xs.filter((x) => x > LONG_WAIT_MS));
      console.log(`  waits in clean wait or wait call-back over ${LONG_WAIT_MS / 1000} s (a regular heartbeat awaited): ${long.length}`);
      console.log(`  heartbeats skipped on a locked node: ${skips} (${(skips / Math.max(1, n)).toFixed(2)} per node${where ? `; ${where}` : ''})`);
      console.log(`  Ironic done with a verb → the driver's next write: ${row(turns, n)}`);
      console.log(`  the phase's last move → the driver's next request: ${row(seen, n)}`);
    }
  }
}

if (process.argv[1]?.endsWith('agent-states.ts')) main();
