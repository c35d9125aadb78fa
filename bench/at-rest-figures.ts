/**
 * The figures `npm run bench:at-rest` prints, from what the run recorded:
 * rates per minute over a window, CPU as a share of a core, and with
 * --lose-ironic-db when each host was registered again (bench/ironic-loss.ts).
 * Pure: no stack needed to test them.
 */
import type { RecordedRequest } from './support/ironic-proxy';
import { OWNER_KEY } from '../activities/ironic/node-driver';
import { percentiles } from './common';
import { writesOf, type KubeRequestCounts } from './kube-stack';
import { requestKind } from './measure';
import { cpuProcesses, type CpuByProcess } from './report';

const tenths = (x: number): number => Math.round(x * 10) / 10;

/** `n` events over `seconds`, per minute (one decimal). */
export const perMinute = (n: number, seconds: number): number => (seconds > 0 ? tenths((n / seconds) * 60) : 0);

/** Counts by key, each per minute over `seconds`. */
export const ratesPerMinute = (counts: Record<string, number>, seconds: number): Record<string, number> =>
  Object.fromEntries(Object.entries(counts).map(([k, n]) => [k, perMinute(n, seconds)]));

export interface KubeRates {
  requestsPerMinute: number;
  statusWritesPerMinute: number;
  eventsPerMinute: number;
  requestsPerMinuteByKind: Record<string, number>;
}

/** The API server's requests over a window (counts by kind, bench/kube-stack.ts), per minute: the status writes and Events among them. */
export function kubeRates(counts: KubeRequestCounts, seconds: number): KubeRates {
  const writes = writesOf(counts);
  return {
    requestsPerMinute: perMinute(Object.values(counts).reduce((a, b) => a + b, 0), seconds),
    statusWritesPerMinute: perMinute(writes.statusWrites, seconds),
    eventsPerMinute: perMinute(writes.events, seconds),
    requestsPerMinuteByKind: ratesPerMinute(counts, seconds),
  };
}

/** Ironic requests by kind (bench/measure.ts's `METHOD /path?query-keys`). */
export function requestsByKind(requests: readonly RecordedRequest[]): Record<string, number> {
  const kinds: Record<string, number> = {};
  for (const r of requests) kinds[requestKind(r)] = (kinds[requestKind(r)] ?? 0) + 1;
  return kinds;
}

/**
 * Each process's CPU seconds over `seconds` as a percentage of one core: metalflow's processes, Temporal and
 * Ironic (and in Kubernetes mode the controller, kube-apiserver and etcd instead of the API); not the bench's own.
 */
export function cpuPercentOfACore(cpu: CpuByProcess, seconds: number): Record<string, number> {
  const kube = cpu.controller !== undefined;
  return Object.fromEntries(
    cpuProcesses(cpu)
      .filter((p) => p !== 'bench' && !(kube && p === 'api'))
      .map((p) => [p, seconds > 0 ? tenths(((cpu[p] ?? 0) / seconds) * 100) : 0]),
  );
}

/** A node create Ironic accepted: its ownership mark (`<namespace>/<name>`), or undefined. */
function createdMark(r: RecordedRequest): string | undefined {
  if (r.method !== 'POST' || r.path.split('?')[0] !== '/v1/nodes' || r.status === undefined || r.status < 200 || r.status >= 300) return undefined;
  try {
    const mark = (JSON.parse(r.body) as { extra?: Record<string, unknown> }).extra?.[OWNER_KEY];
    return typeof mark === 'string' ? mark : undefined;
  } catch {
    return undefined;
  }
}

/**
 * When each host got its new node: the answer to the first node create Ironic accepted with the host's mark, among
 * `requests` (those from the restart on). Keyed by the mark; a host's later creates change nothing.
 */
export function nodesCreated(requests: readonly RecordedRequest[], into = new Map<string, number>()): Map<string, number> {
  for (const r of requests) {
    const mark = createdMark(r);
    if (mark !== undefined && !into.has(mark)) into.set(mark, r.answeredAt ?? r.at);
  }
  return into;
}

/** Registered again: when every sign of it was there (the new node, and in Kubernetes mode the object's new node ID). */
export function registeredAt(signs: (number | undefined)[]): number | undefined {
  if (signs.some((s) => s === undefined)) return undefined;
  return Math.max(...(signs as number[]));
}

export interface ReregistrationFigures {
  hosts: number;
  reregistered: number;
  /** The target: every host registered again within this many seconds of Ironic answering again. */
  targetSeconds: number;
  withinTarget: number;
  /** Seconds from Ironic answering again, over the hosts that registered again (absent when none did). */
  seconds?: { max: number; p50: number; p95: number };
  /** Hosts that did not register again within the recovery window (the first ten). */
  missing: string[];
}

export const REREGISTRATION_TARGET_SECONDS = 60;

/** Max / p50 / p95 seconds (one decimal) from `back` (Ironic answering again) to each host's registration. */
export function reregistrationFigures(names: readonly string[], at: ReadonlyMap<string, number>, back: number): ReregistrationFigures {
  const secs = names.filter((n) => at.has(n)).map((n) => Math.max(0, at.get(n)! - back) / 1000);
  const p = percentiles(secs);
  return {
    hosts: names.length,
    reregistered: secs.length,
    targetSeconds: REREGISTRATION_TARGET_SECONDS,
    withinTarget: secs.filter((s) => s <= REREGISTRATION_TARGET_SECONDS).length,
    ...(p ? { seconds: { max: tenths(p.max), p50: tenths(p.p50), p95: tenths(p.p95) } } : {}),
    missing: names.filter((n) => !at.has(n)).slice(0, 10),
  };
}
