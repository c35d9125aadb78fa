/** One driver through the phases: wall time, Ironic requests (through the counting proxy) and CPU per phase. */
import { appendFileSync } from 'node:fs';
import { requestLogLine } from './support/request-log';
import type { IronicProxy, RecordedRequest } from './support/ironic-proxy';
import { PHASES, type BenchHost, type Phase } from './common';
import { cpuProcesses, type CpuByProcess, type DriverFigures } from './report';
import { siteFigures, type MeasuredSite, type SitePhaseSample } from './sites';

/** Normalised request kind: node IDs and names become {node}, query values are dropped. */
export function requestKind(r: RecordedRequest): string {
  const [path = '', query] = r.path.split('?');
  const p = path.replace(/^\/v1\/nodes\/[^/]+/, '/v1/nodes/{node}');
  const q = query ? `?${query.split('&').map((kv) => kv.split('=')[0]).filter((k) => k !== 'fields').join('&')}` : '';
  return `${r.method} ${p}${q === '?' ? '' : q}`;
}

/** A node PATCH's fields (top-level path segments, `extra/<key>` for extra), e.g. `instance_info+deploy_interface`. */
export function patchFields(r: RecordedRequest): string {
  try {
    const ops = JSON.parse(r.body) as { path?: string }[];
    const fields = ops.map((o) => (o.path ?? '').split('/').slice(1, o.path?.startsWith('/extra/') ? 3 : 2).join('/'));
    return [...new Set(fields)].sort().join('+');
  } catch {
    return '?';
  }
}

/** Each process's CPU from `a` to `b`, scaled by `per` (1 / seconds: a share of a core). */
export const cpuDelta = (a: CpuByProcess, b: CpuByProcess, per = 1): CpuByProcess =>
  Object.fromEntries(cpuProcesses(b).map((k) => [k, ((b[k] ?? 0) - (a[k] ?? 0)) * per])) as CpuByProcess;

export interface MeasureContext {
  phases: Phase[];
  hosts: BenchHost[];
  proxy: IronicProxy;
  cpuNow: () => CpuByProcess;
  log: (msg: string) => void;
  /**
   * `--sites N`: each site's hosts, the proxy in front of its Ironic and its Ironic's CPU. Their requests
   * count in the totals beside `proxy`'s (the default site's Ironic), and each site's figures are kept apart.
   */
  sites?: MeasuredSite[];
}

/** Runs the phases with a driver, timing them and counting Ironic requests. */
export async function measurePhases(
  ctx: MeasureContext,
  label: string,
  runPhase: (p: Phase, hs: BenchHost[]) => Promise<void>,
  afterPhase?: (p: Phase) => Promise<void>,
  /** When the phase really ended, if the driver saw it before it returned (first look of a confirmed state). */
  endOf?: (p: Phase) => number | undefined,
  /** When a host reached the phase, if the driver saw it (the per-site phase times). */
  reachedAt?: (p: Phase, host: string) => number | undefined,
): Promise<DriverFigures> {
  const n = ctx.hosts.length;
  const phaseMs = {} as Record<Phase, number>;
  const cumulativeMs = {} as Record<Phase, number>;
  const byPhase = {} as Record<Phase, number>;
  const cpuByPhase = {} as DriverFigures['cpuSecondsByPhase'];
  const kinds: Record<string, number> = {};
  const sites = ctx.sites ?? [];
  const siteSamples = sites.map(() => ({}) as Partial<Record<Phase, SitePhaseSample>>);
  for (const p of ctx.phases) {
    const start = Date.now();
    const cpu0 = ctx.cpuNow();
    const siteCpu0 = sites.map((s) => s.ironicCpu());
    ctx.proxy.requests.length = 0;
    for (const s of sites) s.proxy.requests.length = 0;
    await runPhase(p, ctx.hosts);
    const end = endOf?.(p) || Date.now();
    sites.forEach((s, i) => {
      siteSamples[i]![p] = {
        startedAt: start,
        cpu0: siteCpu0[i]!,
        cpu1: s.ironicCpu(),
        requests: s.proxy.requests.length,
        reachedAt: s.hosts.map((h) => reachedAt?.(p, h.name)),
        endedAt: end,
      };
    });
    // Every Ironic's requests: the default site's (proxy) and, with --sites, each site's.
    const requests = [...ctx.proxy.requests, ...sites.flatMap((s) => s.proxy.requests)];
    phaseMs[p] = end - start;
    // Sum of phase times: waits between phases (idle sampling) are not the lifecycle's.
    cumulativeMs[p] = Object.values(phaseMs).reduce((a, b) => a + b, 0);
    cpuByPhase[p] = cpuDelta(cpu0, ctx.cpuNow());
    byPhase[p] = requests.length / n;
    // Every request of the phase, one JSON line each, to follow one node's requests in order (where a count comes from).
    const requestLog = process.env.METALFLOW_BENCH_REQUEST_LOG;
    // With Ironic's answer (status, answeredAt: when it came; unset when none came), for a read's time in Ironic's queue.
    if (requestLog) appendFileSync(requestLog, requests.map((r) => requestLogLine({ driver: label, phase: p, method: r.method, path: r.path, at: r.at, status: r.status, answeredAt: r.answeredAt })).join(''));
    for (const r of requests) kinds[requestKind(r)] = (kinds[requestKind(r)] ?? 0) + 1;
    ctx.log(`${label}: ${p} after ${(phaseMs[p] / 1000).toFixed(1)} s (${byPhase[p].toFixed(1)} Ironic requests per host)`);
    // Which fields each node PATCH wrote (issue 17: PATCHes per host against the floor's).
    const patches: Record<string, number> = {};
    for (const r of requests) if (r.method === 'PATCH') patches[patchFields(r)] = (patches[patchFields(r)] ?? 0) + 1;
    const listed = Object.entries(patches).map(([f, c]) => `${f} ${(c / n).toFixed(2)}`);
    if (listed.length > 0) ctx.log(`${label}: ${p} node PATCHes per host by field: ${listed.join(', ')}`);
    await afterPhase?.(p);
  }
  for (const p of PHASES) {
    phaseMs[p] ??= 0;
    cumulativeMs[p] ??= cumulativeMs.available;
    byPhase[p] ??= 0;
    cpuByPhase[p] ??= { temporal: 0, ironic: 0, worker: 0, api: 0, bench: 0 };
  }
  return {
    phaseMs,
    cumulativeMs,
    ironicRequestsPerHost: Object.values(byPhase).reduce((a, b) => a + b, 0),
    ironicRequestsPerHostByPhase: byPhase,
    ironicRequestsPerHostByKind: Object.fromEntries(Object.entries(kinds).map(([k, v]) => [k, v / n])),
    cpuSecondsByPhase: cpuByPhase,
    ...(sites.length > 0 ? { bySite: sites.map((s, i) => siteFigures(s.name, s.hosts.length, siteSamples[i]!)) } : {}),
  };
}
