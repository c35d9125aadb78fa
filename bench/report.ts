/** The benchmark's result document and its table on stdout, with the scale targets beside the figures. */
import { PHASES, PHASE_LABEL, type Percentiles, type Phase } from './common';
import type { FleetPhaseFigures } from './fleet-driver';
import type { TemporalFigures } from './temporal';
import type { TemporalProfileName, TemporalServerInfo } from './temporal-profile';
import type { WorkerFigures } from './worker-watch';
import { DEFAULT_HOST_OPTIONS } from '../contracts/host';
import type { Driver } from './options';
import type { LauncherEventCounts } from './agent-stack';
import { siteIronicCpuPerHost, type SiteDriverFigures } from './sites';

export const CORE_PROCESSES = ['temporal', 'ironic', 'worker', 'api', 'bench'] as const;
/** Kubernetes mode's own processes (--driver k8s): present only in its results. */
export const KUBE_PROCESSES = ['controller', 'apiserver', 'etcd'] as const;
/**
 * The agent path's hosts (--agent): sushy-tools (their BMCs) and the fake agent with its launcher (their
 * ramdisks). Present only in its results, and never orchestration: they stand for the machines.
 */
export const AGENT_PROCESSES = ['sushy', 'agent'] as const;
export type AgentCpu = Record<(typeof AGENT_PROCESSES)[number], number>;
/**
 * `--sites N`: every site worker together (`worker` is then the central one, which runs the host
 * workflows). Present only in its results; orchestration. With sites, `ironic` is every Ironic of the
 * run: each site's and the default site's (the central worker's, with no host of the run).
 */
export const SITE_PROCESSES = ['siteWorkers'] as const;
export type CpuByProcess = Record<(typeof CORE_PROCESSES)[number], number> &
  Partial<Record<(typeof KUBE_PROCESSES)[number], number>> &
  Partial<AgentCpu> &
  Partial<Record<(typeof SITE_PROCESSES)[number], number>>;
export type CpuProcess = keyof CpuByProcess;

/** The processes a run's CPU figures name: the core ones, and Kubernetes mode's or the agent path's where they ran. */
export const cpuProcesses = (c: CpuByProcess): CpuProcess[] => [
  ...CORE_PROCESSES,
  ...KUBE_PROCESSES.filter((k) => c[k] !== undefined),
  ...AGENT_PROCESSES.filter((k) => c[k] !== undefined),
  ...SITE_PROCESSES.filter((k) => c[k] !== undefined),
];

/**
 * Hosts per hour through the whole lifecycle: the run's hosts over the sum of its phase times (all hosts
 * in flight at once unless --concurrency says fewer). Undefined without a time. Pure.
 */
export function hostsPerHour(hosts: number, d: Pick<DriverFigures, 'cumulativeMs'>, phases: readonly Phase[]): number | undefined {
  const ms = d.cumulativeMs[phases.at(-1)!];
  return ms > 0 ? (hosts * 3_600_000) / ms : undefined;
}

/**
 * What metalflow's orchestration costs, beside Ironic's and the benchmark's own: Temporal, the
 * workers and the API, and in Kubernetes mode the controller, kube-apiserver and etcd (a Metal3
 * user pays for them to drive hosts through BareMetalHosts); with sites, every site worker too.
 */
export const orchestrationCpu = (c: CpuByProcess): number =>
  c.temporal + c.worker + c.api + (c.controller ?? 0) + (c.apiserver ?? 0) + (c.etcd ?? 0) + (c.siteWorkers ?? 0);

/** --driver k8s: what the API server did, per host lifecycle (every client: the driver, the controller, the worker). */
export interface KubeFigures {
  requestsPerHost: number;
  requestsPerHostByPhase: Record<Phase, number>;
  /** `VERB resource[/subresource]` (and the code when not 2xx), from apiserver_request_total. */
  requestsPerHostByKind: Record<string, number>;
  statusWritesPerHost: number;
  eventsPerHost: number;
}

export interface DriverFigures {
  /** Wall time of each phase, ms. */
  phaseMs: Record<Phase, number>;
  /** Cumulative wall time from the first create to the end of each phase, ms. */
  cumulativeMs: Record<Phase, number>;
  ironicRequestsPerHost: number;
  ironicRequestsPerHostByPhase: Record<Phase, number>;
  ironicRequestsPerHostByKind: Record<string, number>;
  cpuSecondsByPhase: Record<Phase, CpuByProcess>;
  /** `--sites N`: each site's phase times, Ironic requests and Ironic CPU (bench/sites.ts); the totals are above. */
  bySite?: SiteDriverFigures[];
}

export interface BenchResult {
  version: 1;
  date: string;
  commit: string;
  machine: { cpus: number; cpuModel: string; memGiB: number; node: string; os: string };
  /** Which Temporal ran the workflows (absent in older results: the dev server). */
  temporalServer?: TemporalServerInfo;
  options: {
    hosts: number;
    concurrency: number;
    redfish: boolean;
    /** --agent (absent in older results: no). */
    agent?: boolean;
    /** --agent: how the fake agent was paced (bench/agent-stack.ts FAKE_AGENT_SETTINGS). */
    fakeAgent?: { bootMs: number; stepMs: number; stepTimes?: Record<string, number>; minHeartbeatMs: number };
    /**
     * --agent: how Ironic ran (bench/agent-stack.ts agentIronicSettings). Absent in the first agent runs: the
     * BMC password hash on every BMC call (Ironic's own code), fast track off.
     */
    agentIronic?: { memoSessionHash: boolean; fastTrack: boolean };
    floorPollMs: number;
    idleSeconds: number;
    phases: Phase[];
    floor?: boolean;
    maxHistoryEvents?: number;
    /** Absent in results from before --temporal: the dev server. */
    temporal?: TemporalProfileName;
    /** Worker processes (absent in older results: one). */
    workers?: number;
    fleet?: boolean;
    /** What drove the metalflow lifecycle (absent in older results: the per-host API); `floor`: a FloorOnlyResult. */
    driver?: Driver;
    workerEnv?: Record<string, string>;
    /** METALFLOW_POWER_SENTINEL_SECONDS as the workers read it (0: off); absent in results before it was recorded. */
    powerSentinelSeconds?: number;
    /** Ironic's [conductor]sync_power_state_interval in seconds, from its generated config (absent before 455218a: 30). */
    ironicSyncPowerStateInterval?: number;
    /**
     * How the driver looked at its hosts: 'visibility-list' = one narrowed visibility list per
     * tick, paused while the fleet is at rest (bench/host-look.ts); absent = the earlier runs'
     * GET /v1/hosts plus a list of running operations (three visibility lists per tick, all the time).
     */
    observer?: 'visibility-list';
    /** `--sites N` with N > 1: hosts round-robin over N sites, each its own Ironic and site worker (absent: one site). */
    sites?: number;
  };
  metalflow: DriverFigures & {
    temporal: TemporalFigures;
    /** RSS figures are the largest worker's, CPU the sum over workers (--workers). */
    worker: WorkerFigures & {
      idleRssMiB?: number;
      idleHosts?: number;
      idleState?: string;
      /** CPU seconds per second of each process while all hosts sat idle. */
      idleCpuShare?: CpuByProcess;
    };
    api: { peakRssMiB: number; cpuSeconds: number };
    /** 5xx answers of the API (retried by the driver). */
    apiServerErrors: { count: number; byMessage: Record<string, number> };
    /** --driver fleet: the fleet operation of each phase. */
    fleetOperations?: FleetPhaseFigures[];
    /** Mean history events per host lifecycle by cause (bench/event-breakdown.ts), from `hosts` sampled hosts. */
    historyEventsByCause?: { hosts: number; perHost: Record<string, number>; taskWakes?: Record<string, number> };
    /** --driver k8s: the controller's peak RSS, and the API server's requests. */
    controller?: { peakRssMiB: number; cpuSeconds: number };
    kube?: KubeFigures;
    /** `--sites N`: each site worker's peak RSS and CPU seconds over the run (`worker` is the central one). */
    siteWorkers?: { site: string; peakRssMiB: number; cpuSeconds: number }[];
  };
  /** --fleet: the same lifecycle driven by one fleet operation per phase. */
  fleet?: DriverFigures & { operations: FleetPhaseFigures[]; temporal: TemporalFigures };
  /** Absent with --no-floor (scale runs: no target needs it at 1,000 hosts). */
  floor?: DriverFigures;
  /** The floor's run failed: why (metalflow's figures stand without the comparison). */
  floorError?: string;
  /** --agent: the agent launcher's boots of each lifecycle (4 per host: inspection, cleaning, deploy, cleaning). */
  agentBoots?: { metalflow: LauncherEventCounts; floor?: LauncherEventCounts };
  ratio: Partial<Record<Phase, number>>;
  targets: { name: string; target: string; measured: string; met: boolean | null; note?: string }[];
}

/**
 * `--driver floor`: the floor alone, the floor half of a comparison made of several runs (at 1,000
 * hosts on a slow machine each lifecycle is one to two hours). `npm run bench -- compare` puts it
 * beside the metalflow runs of the same commit.
 */
export interface FloorOnlyResult extends Pick<BenchResult, 'version' | 'date' | 'commit' | 'machine' | 'options'> {
  floorOnly: true;
  floor: DriverFigures;
}

export const isFloorOnly = (r: BenchResult | FloorOnlyResult): r is FloorOnlyResult => 'floorOnly' in r && r.floorOnly === true;

/** What the hosts were: the run's profile in a few words. */
const hostKind = (o: BenchResult['options']): string =>
  o.agent ? 'agent path (Redfish virtual media on sushy-tools, fake agent)' : o.redfish ? 'redfish (sushy-tools)' : 'fake-hardware';

const s = (ms: number | undefined): string => (ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s`);
const ms = (v: number | undefined): string => (v === undefined ? '-' : `${Math.round(v)}`);
const pad = (v: string, n: number): string => v.padEnd(n);
const padl = (v: string, n: number): string => v.padStart(n);

/**
 * Issue 17's targets (they replace issue 5's ratio of 1.25 and keep its standing ones): printed beside
 * the figures, never asserted. `met: null` where this run cannot say (another host count, no floor).
 */
export function evaluateTargets(r: Omit<BenchResult, 'targets'>): BenchResult['targets'] {
  const targets: BenchResult['targets'] = [];
  const n = r.options.hosts;
  const at = (hosts: number) => (n !== hosts ? { note: `target defined at ${hosts.toLocaleString('en')} hosts; this run has ${n}` } : {});
  for (const p of r.options.phases) {
    const ratio = r.ratio[p];
    targets.push({
      name: `metalflow / floor, ${PHASE_LABEL[p]}`,
      target: '<= 1.10 (100 hosts)',
      measured: ratio === undefined ? '-' : ratio.toFixed(2),
      met: ratio === undefined || n !== 100 ? null : ratio <= 1.1,
      ...at(100),
    });
  }
  const k8s = r.options.driver === 'k8s';
  // Kubernetes mode's own targets: its API server, etcd and controller beside the API path's cost.
  const wholeTarget = k8s ? 1.05 : 1.15;
  const whole = r.floor ? r.metalflow.cumulativeMs[r.options.phases.at(-1)!] / r.floor.cumulativeMs[r.options.phases.at(-1)!] : undefined;
  targets.push({
    name: 'metalflow / floor, whole lifecycle',
    target: `<= ${wholeTarget.toFixed(2)} (1,000 hosts)`,
    measured: whole === undefined || !Number.isFinite(whole) ? '-' : whole.toFixed(2),
    met: whole === undefined || n < 1000 ? null : whole <= wholeTarget,
    ...at(1000),
  });
  const events = r.metalflow.temporal.historyEventsPerHost?.p50;
  targets.push({
    name: 'history events per host lifecycle (p50)',
    target: '<= 90',
    measured: events === undefined ? '-' : String(events),
    met: events === undefined ? null : events <= 90,
  });
  const temporalCpu = r.options.phases.reduce((a, p) => a + r.metalflow.cpuSecondsByPhase[p].temporal, 0) / n;
  targets.push({
    name: 'Temporal CPU per host lifecycle',
    target: '<= 0.35 s',
    measured: `${temporalCpu.toFixed(2)} s`,
    met: temporalCpu <= 0.35,
  });
  const orchestration = r.options.phases.reduce((a, p) => a + orchestrationCpu(r.metalflow.cpuSecondsByPhase[p]), 0) / n;
  const orchestrationTarget = k8s ? 0.55 : 0.5;
  const sites = r.options.sites ?? 1;
  targets.push({
    name: 'orchestration CPU per host lifecycle',
    target: `<= ${orchestrationTarget} s (${k8s ? 'Temporal + worker + controller + kube-apiserver + etcd' : sites > 1 ? 'Temporal + central worker + site workers + API' : 'Temporal + worker + API'})`,
    measured: `${orchestration.toFixed(2)} s`,
    met: orchestration <= orchestrationTarget,
  });
  if (sites > 1) {
    // Issue 45's: spreading the hosts over sites adds a site worker per site, and the whole must cost no more per host.
    targets.push({
      name: `orchestration CPU per host lifecycle, ${sites} sites`,
      target: 'does not grow with N',
      measured: `${orchestration.toFixed(2)} s at ${sites} sites`,
      met: null,
      note: `compare with the same run at --sites 1`,
    });
  }
  const p99 = r.metalflow.temporal.apiToFirstActivityMs.create.fromRequest?.p99;
  targets.push({
    name: 'API call -> first activity p99',
    target: '< 1000 ms (100 concurrent)',
    measured: `${ms(p99)} ms`,
    met: p99 === undefined ? null : p99 < 1000,
    ...(r.options.concurrency !== 100 ? { note: `concurrency ${r.options.concurrency}` } : {}),
  });
  targets.push({
    // Issue 47's: half the ~40 of 2026-11 (the floor drives Ironic one host at a time; metalflow should not have to).
    name: 'Ironic requests per host',
    target: '<= 20',
    measured: r.metalflow.ironicRequestsPerHost.toFixed(1),
    met: r.metalflow.ironicRequestsPerHost <= 20,
  });
  const idle = r.metalflow.worker.idleRssMiB;
  targets.push({
    name: 'worker RSS with 1,000 idle hosts',
    target: '< 512 MiB',
    measured: idle === undefined ? '-' : `${idle.toFixed(0)} MiB (${r.metalflow.worker.idleHosts} idle hosts)`,
    met: idle === undefined || n < 1000 ? null : idle < 512,
    ...(n < 1000 ? { note: 'evaluated with --hosts 1000' } : {}),
  });
  return targets;
}

function pctRow(label: string, p: Percentiles | undefined, width = 14): string {
  if (!p) return `  ${pad(label, width)} -`;
  return `  ${pad(label, width)} ${padl(ms(p.p50), 7)} ${padl(ms(p.p95), 7)} ${padl(ms(p.p99), 7)} ${padl(ms(p.max), 7)}   n=${p.n}`;
}

export function formatTable(r: BenchResult): string {
  const out: string[] = [];
  const m = r.metalflow;
  const t = m.temporal;
  out.push(
    `metalflow benchmark: ${r.options.hosts} hosts, concurrency ${r.options.concurrency}, ${hostKind(r.options)}; ` +
      (r.options.driver === 'fleet' ? 'driven by fleet operations; ' : '') +
      (r.options.driver === 'k8s' ? 'driven through BareMetalHosts (kube-apiserver, controller); ' : '') +
      ((r.options.sites ?? 1) > 1 ? `spread over ${r.options.sites} sites; ` : '') +
      (r.floor ? `floor polls every ${r.options.floorPollMs} ms` : r.floorError ? `the floor run FAILED: ${r.floorError}` : 'no floor run (--no-floor)'),
  );
  out.push(`machine: ${r.machine.cpus} cores (${r.machine.cpuModel}), ${r.machine.memGiB} GiB, Node ${r.machine.node}; commit ${r.commit}; ${r.date}`);
  const workerEnv = Object.entries(r.options.workerEnv ?? {});
  if (r.temporalServer) out.push(`temporal: ${r.temporalServer.server} on ${r.temporalServer.persistence}, ${r.temporalServer.address}`);
  const sync = r.options.ironicSyncPowerStateInterval;
  out.push(`ironic: power state sync ${sync === undefined ? 'interval unknown (before 455218a: 30 s)' : `every ${sync} s`}`);
  out.push(
    `driver's look at the hosts: ${r.options.observer === 'visibility-list' ? 'one visibility list per tick, none while at rest' : 'GET /v1/hosts + a list of running operations per tick, also while at rest (before this field; part of Temporal CPU)'}`,
  );
  const sentinel = r.options.powerSentinelSeconds;
  if (sentinel !== undefined) out.push(`power sentinel: ${sentinel > 0 ? `Ironic's nodes listed every ${sentinel} s, hosts' own checks a backstop` : 'off (each idle host checks its power itself)'}`);
  if (workerEnv.length > 0) out.push(`worker settings: ${workerEnv.map(([k, v]) => `${k}=${v}`).join(' ')}`);
  out.push('');
  out.push(`  ${pad('phase (wall time)', 28)} ${padl('metalflow', 10)} ${padl('floor', 9)} ${padl('ratio', 7)}   target`);
  for (const p of r.options.phases) {
    const ratio = r.ratio[p];
    // Issue 17's per-phase target, defined at 100 hosts (as in evaluateTargets; it replaced issue 5's 1.25).
    const verdict = ratio === undefined ? '' : r.options.hosts !== 100 ? 'n/a' : ratio <= 1.1 ? 'met' : 'MISSED';
    out.push(`  ${pad(PHASE_LABEL[p], 28)} ${padl(s(m.phaseMs[p]), 10)} ${padl(r.floor ? s(r.floor.phaseMs[p]) : '-', 9)} ${padl(ratio?.toFixed(2) ?? '-', 7)}   <= 1.10 at 100 hosts ${verdict}`);
  }
  const cumul = (d: DriverFigures): string =>
    `all-available ${s(d.cumulativeMs.available)}` +
    (r.options.phases.includes('provisioned') ? `, all-provisioned ${s(d.cumulativeMs.provisioned)}` : '') +
    `, all-gone ${s(d.cumulativeMs.gone)}`;
  out.push(`  cumulative metalflow: ${cumul(m)}`);
  if (r.floor) out.push(`  cumulative floor:     ${cumul(r.floor)}`);
  const perHour = (d: DriverFigures | undefined): string => {
    const v = d && hostsPerHour(r.options.hosts, d, r.options.phases);
    return v === undefined ? '-' : v.toFixed(0);
  };
  out.push(`  hosts per hour (whole lifecycle, ${r.options.concurrency} in flight): metalflow ${perHour(m)}, floor ${perHour(r.floor)}`);
  if (r.options.fakeAgent) {
    const f = r.options.fakeAgent;
    const times = Object.entries(f.stepTimes ?? {}).map(([k, v]) => `${k} ${v}`);
    out.push(`  fake agent: boots in ${f.bootMs} ms, steps take ${f.stepMs} ms${times.length > 0 ? ` (${times.join(', ')} ms)` : ''}, heartbeats at least ${f.minHeartbeatMs} ms apart`);
    const ironic = r.options.agentIronic;
    out.push(
      `  agent path's Ironic: ${ironic?.memoSessionHash ? 'BMC password hash computed once per BMC (IRONIC_MEMO_SESSION_HASH=1)' : "its own code: the BMC password's PBKDF2 on every BMC call"}, fast track ${ironic?.fastTrack ? 'on' : 'off'}`,
    );
  }
  if (r.agentBoots) {
    const b = (c: LauncherEventCounts): string => `${(c.started / r.options.hosts).toFixed(2)} per host${c.failed > 0 ? `, ${c.failed} boot(s) FAILED` : ''}`;
    out.push(`  agent boots: metalflow ${b(r.agentBoots.metalflow)}${r.agentBoots.floor ? `, floor ${b(r.agentBoots.floor)}` : ''} ${r.options.agentIronic?.fastTrack ? '(fast track: inspection and the cleaning on deprovision boot; provisioning cleans and deploys on the agent still up: 2)' : '(inspection, cleaning, deploy, cleaning: 4)'}`);
  }
  if (m.fleetOperations) out.push(`  metalflow driven by fleet operations (--driver fleet):`, ...fleetOperationRows(r, m.fleetOperations));
  if (r.fleet) out.push('', ...formatFleet(r, r.fleet));
  out.push('');
  out.push(`  ${pad('step latency ms', 14)} ${padl('p50', 7)} ${padl('p95', 7)} ${padl('p99', 7)} ${padl('max', 7)}   (each operation, start -> end: inside the host workflow, or a child from before operations-inline)`);
  for (const kind of ['enroll', 'inspect', 'prepare', 'provision', 'deprovision', 'power', 'delete']) {
    if (t.stepLatencyMs[kind]) out.push(pctRow(kind, t.stepLatencyMs[kind]));
  }
  out.push('');
  out.push('  API call -> first activity started (ms)');
  out.push(`  ${pad('', 14)} ${padl('p50', 7)} ${padl('p95', 7)} ${padl('p99', 7)} ${padl('max', 7)}`);
  out.push(pctRow('create', t.apiToFirstActivityMs.create.fromRequest) + '   target p99 < 1000');
  out.push(pctRow('  from reply', t.apiToFirstActivityMs.create.fromResponse));
  if (t.apiToFirstActivityMs.setImage.fromRequest) {
    out.push(pctRow('set image', t.apiToFirstActivityMs.setImage.fromRequest));
    out.push(pctRow('  from reply', t.apiToFirstActivityMs.setImage.fromResponse));
  }
  out.push('  where the create call goes (ms, each from the previous mark):');
  for (const [k, v] of Object.entries(t.createBreakdownMs)) out.push(pctRow(k, v, 36));
  if (t.setImageBreakdownMs) {
    out.push('  where the set image call goes (ms, each from the previous mark):');
    for (const [k, v] of Object.entries(t.setImageBreakdownMs)) out.push(pctRow(k, v, 36));
  }
  out.push('');
  const ops = Object.entries(t.operationsPerHost)
    .map(([k, v]) => `${k} ${v.toFixed(2)}`)
    .join(', ');
  out.push(
    `  Temporal history events per host lifecycle: ${ms(t.historyEventsPerHost?.mean)} mean, ${ms(t.historyEventsPerHost?.max)} max ` +
      `(host workflow ${ms(t.hostWorkflowEventsPerHost?.mean)}, the rest in operation children from before operations-inline); ${t.executions} executions`,
  );
  const causes = m.historyEventsByCause;
  if (causes) {
    const listed = Object.entries(causes.perHost).sort((a, b) => b[1] - a[1]);
    out.push(`  history events per host lifecycle by cause (${causes.hosts} hosts read): ${listed.map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')}`);
    const wakes = Object.entries(causes.taskWakes ?? {}).sort((a, b) => b[1] - a[1]);
    if (wakes.length > 0) out.push(`  workflow tasks per host lifecycle by what woke them: ${wakes.map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')}`);
  }
  out.push(`  operations per host: ${ops}; failed operations: ${t.failedOperations}`);
  out.push(
    `  largest host workflow run: ${t.maxHostRunEvents} events (Temporal limit 51,200, warning at 10,240; ` +
      `continue-as-new at ${(r.options.maxHistoryEvents ?? DEFAULT_HOST_OPTIONS.maxHistoryEvents).toLocaleString('en')}` +
      `${r.options.maxHistoryEvents !== undefined ? ' (--max-history-events)' : ''}); hosts continued as new: ${t.hostsContinuedAsNew}`,
  );
  out.push('');
  const floorKinds = r.floor?.ironicRequestsPerHostByKind ?? {};
  out.push(`  Ironic requests per host: metalflow ${m.ironicRequestsPerHost.toFixed(1)}, floor ${r.floor?.ironicRequestsPerHost.toFixed(1) ?? '-'}`);
  const kinds = [...new Set([...Object.keys(m.ironicRequestsPerHostByKind), ...Object.keys(floorKinds)])].sort();
  for (const k of kinds) {
    out.push(`    ${pad(k, 44)} ${padl((m.ironicRequestsPerHostByKind[k] ?? 0).toFixed(2), 7)} ${padl(r.floor ? (floorKinds[k] ?? 0).toFixed(2) : '-', 7)}`);
  }
  out.push('');
  out.push(
    `  worker${(m.worker.processes ?? 1) > 1 ? ` (${m.worker.processes} processes: RSS of the largest, CPU summed)` : ''}: ` +
      `peak RSS ${m.worker.peakRssMiB.toFixed(0)} MiB, CPU ${m.worker.cpuSeconds.toFixed(1)} s` +
      (m.worker.idleRssMiB !== undefined ? `; RSS with ${m.worker.idleHosts} hosts idle in ${m.worker.idleState ?? 'provisioned'}: ${m.worker.idleRssMiB.toFixed(0)} MiB (target < 512 MiB at 1,000)` : ''),
  );
  const idleCpu = m.worker.idleCpuShare;
  if (idleCpu) {
    out.push(
      `  CPU share with all hosts idle: ${cpuProcesses(idleCpu).filter((x) => x !== 'bench').map((x) => `${x} ${((idleCpu[x] ?? 0) * 100).toFixed(1)}%`).join(', ')} of one core`,
    );
  }
  if (m.controller) out.push(`  controller: peak RSS ${m.controller.peakRssMiB.toFixed(0)} MiB, CPU ${m.controller.cpuSeconds.toFixed(1)} s`);
  else out.push(`  API:    peak RSS ${m.api.peakRssMiB.toFixed(0)} MiB, CPU ${m.api.cpuSeconds.toFixed(1)} s`);
  out.push(
    `  API 5xx answers (retried): ${m.apiServerErrors.count}` +
      (m.apiServerErrors.count > 0 ? ` (${Object.entries(m.apiServerErrors.byMessage).map(([k, v]) => `${v} x "${k}"`).join(', ')})` : ''),
  );
  out.push('');
  const procs = cpuProcesses(m.cpuSecondsByPhase[r.options.phases[0]!]);
  // A name longer than the column (siteWorkers) keeps a space before it; the others as they always were.
  const col = (x: string): number => Math.max(11, x.length + 1);
  out.push(`  CPU seconds by process and phase   ${procs.map((x) => padl(x, col(x))).join('')}`);
  for (const [label, d] of [['metalflow', m] as const, ...(r.floor ? [['floor', r.floor] as const] : [])]) {
    for (const p of r.options.phases) {
      const c = d.cpuSecondsByPhase[p];
      out.push(`    ${pad(`${label} ${PHASE_LABEL[p]}`, 33)}${procs.map((x) => padl((c[x] ?? 0).toFixed(1), col(x))).join('')}`);
    }
  }
  if (m.kube) out.push('', ...formatKube(r, m.kube));
  if (m.bySite) out.push('', ...formatSites(r));
  const temporalCpu = r.options.phases.reduce((a, p) => a + m.cpuSecondsByPhase[p].temporal, 0);
  const parts = Object.entries(r.temporalServer?.cpuSecondsByPart ?? {});
  out.push(
    `  Temporal CPU per host lifecycle: ${(temporalCpu / r.options.hosts).toFixed(2)} s` +
      (parts.length > 1 ? ` (whole run with idle sampling: ${parts.map(([k, v]) => `${k} ${v.toFixed(1)} s`).join(', ')})` : ''),
  );
  out.push('');
  out.push('  targets');
  for (const x of r.targets) {
    const verdict = x.met === null ? 'n/a' : x.met ? 'met' : 'MISSED';
    out.push(`    ${pad(x.name, 44)} ${pad(x.target, 28)} ${pad(x.measured, 30)} ${verdict}${x.note ? ` (${x.note})` : ''}`);
  }
  return out.join('\n');
}

/** The table of a floor-only run: phase times, Ironic requests and CPU. */
export function formatFloorOnly(r: FloorOnlyResult): string {
  const f = r.floor;
  const out = [
    `floor alone (--driver floor): ${r.options.hosts} hosts, concurrency ${r.options.concurrency}, ${hostKind(r.options)}${(r.options.sites ?? 1) > 1 ? `, ${r.options.sites} sites` : ''}; polls every ${r.options.floorPollMs} ms`,
    `machine: ${r.machine.cpus} cores (${r.machine.cpuModel}), ${r.machine.memGiB} GiB, Node ${r.machine.node}; commit ${r.commit}; ${r.date}`,
    `ironic: power state sync ${r.options.ironicSyncPowerStateInterval === undefined ? 'interval unknown' : `every ${r.options.ironicSyncPowerStateInterval} s`}`,
    '',
    `  ${pad('phase (wall time)', 28)} ${padl('floor', 10)} ${padl('Ironic req/host', 16)} ${padl('Ironic CPU s', 13)}`,
  ];
  for (const p of r.options.phases) {
    out.push(`  ${pad(PHASE_LABEL[p], 28)} ${padl(s(f.phaseMs[p]), 10)} ${padl(f.ironicRequestsPerHostByPhase[p].toFixed(1), 16)} ${padl(f.cpuSecondsByPhase[p].ironic.toFixed(1), 13)}`);
  }
  const perHour = hostsPerHour(r.options.hosts, f, r.options.phases);
  out.push(`  whole lifecycle ${s(f.cumulativeMs[r.options.phases.at(-1)!])} (${perHour === undefined ? '-' : perHour.toFixed(0)} hosts per hour); Ironic requests per host ${f.ironicRequestsPerHost.toFixed(1)}`);
  if (f.bySite) out.push(`  ${f.bySite.length} sites, the hosts round-robin, each site's Ironic driven directly:`, ...siteRows(r.options.phases, [['floor', f]]));
  out.push('  (compare it with the metalflow runs of the same commit: npm run bench -- compare <results>)');
  return out.join('\n');
}

/** Orchestration CPU seconds per host lifecycle, and its parts (those a run has). Pure. */
export function orchestrationPerHost(d: Pick<DriverFigures, 'cpuSecondsByPhase'>, phases: readonly Phase[], hosts: number): { total: number; parts: [string, number][] } {
  const sum = (of: (c: CpuByProcess) => number): number => phases.reduce((a, p) => a + of(d.cpuSecondsByPhase[p]), 0) / hosts;
  const first = d.cpuSecondsByPhase[phases[0]!];
  const sites = first.siteWorkers !== undefined;
  const parts: [string, number][] = [
    ['Temporal', sum((c) => c.temporal)],
    [sites ? 'central worker' : 'worker', sum((c) => c.worker)],
    ...(sites ? [['site workers', sum((c) => c.siteWorkers ?? 0)] as [string, number]] : []),
    ['API', sum((c) => c.api)],
    ...KUBE_PROCESSES.filter((k) => first[k] !== undefined).map((k) => [k, sum((c) => c[k] ?? 0)] as [string, number]),
  ];
  return { total: sum(orchestrationCpu), parts };
}

/** Each site's phase times (phase start -> the site's last host there), Ironic requests and Ironic CPU per host lifecycle. */
function siteRows(phases: readonly Phase[], drivers: [string, DriverFigures][]): string[] {
  const out = [`  ${pad('per site', 24)} ${phases.map((p) => padl(PHASE_LABEL[p].split(' -> ')[0]!, 12)).join('')} ${padl('Ironic req/host', 16)} ${padl('Ironic CPU s/host', 18)}`];
  for (const [label, d] of drivers) {
    for (const x of d.bySite ?? []) {
      out.push(
        `  ${pad(`${label} ${x.site}`, 24)} ${phases.map((p) => padl(s(x.phaseMs[p]), 12)).join('')} ${padl(x.ironicRequestsPerHost.toFixed(1), 16)} ${padl(siteIronicCpuPerHost(x, phases).toFixed(2), 18)}`,
      );
    }
  }
  return out;
}

/**
 * --sites N: each site's phase times, Ironic requests and Ironic CPU per host lifecycle, for metalflow and
 * the floor, each site worker's CPU, and orchestration CPU per host lifecycle beside its target (that it
 * does not grow with N: the reader compares it with a --sites 1 run of the same hosts).
 */
export function formatSites(r: Pick<BenchResult, 'options' | 'metalflow' | 'floor'>): string[] {
  const phases = r.options.phases;
  const m = r.metalflow;
  const n = m.bySite?.length ?? 0;
  const out = [
    `  ${n} sites, the hosts round-robin (${(m.bySite ?? []).map((x) => `${x.site} ${x.hosts}`).join(', ')}): each site its own Ironic and site worker; the central worker runs the host workflows`,
    ...siteRows(phases, [['metalflow', m], ...(r.floor ? [['floor', r.floor] as [string, DriverFigures]] : [])]),
  ];
  // The rest of `ironic` is the default site's Ironic (the central worker's; no host of the run is there).
  const defaultIronic = (d: DriverFigures): number =>
    phases.reduce((a, p) => a + d.cpuSecondsByPhase[p].ironic - (d.bySite ?? []).reduce((b, x) => b + x.ironicCpuSecondsByPhase[p], 0), 0);
  out.push(`  the default site's Ironic (no host of the run): CPU ${defaultIronic(m).toFixed(1)} s in metalflow's lifecycle${r.floor ? `, ${defaultIronic(r.floor).toFixed(1)} s in the floor's` : ''}`);
  if (m.siteWorkers) {
    out.push(`  site workers: ${m.siteWorkers.map((w) => `${w.site} CPU ${w.cpuSeconds.toFixed(1)} s, peak RSS ${w.peakRssMiB.toFixed(0)} MiB`).join('; ')}`);
  }
  const o = orchestrationPerHost(m, phases, r.options.hosts);
  out.push(
    `  orchestration CPU per host lifecycle: ${o.total.toFixed(2)} s (${o.parts.map(([k, v]) => `${k} ${v.toFixed(2)}`).join(' + ')}); ` +
      `target: does not grow with N (here N = ${n}; compare with the same run at --sites 1)`,
  );
  return out;
}

/** --driver k8s: the API server's requests per host lifecycle by kind and phase, its status writes and Events. */
function formatKube(r: BenchResult, k: KubeFigures): string[] {
  const out = [
    `  kube-apiserver requests per host lifecycle: ${k.requestsPerHost.toFixed(1)} (${r.options.phases.map((p) => `${p} ${k.requestsPerHostByPhase[p].toFixed(1)}`).join(', ')}); ` +
      `status writes ${k.statusWritesPerHost.toFixed(1)}, Events ${k.eventsPerHost.toFixed(1)} per host (every client: the driver, the controller, the worker)`,
  ];
  for (const [kind, v] of Object.entries(k.requestsPerHostByKind).sort((a, b) => b[1] - a[1])) out.push(`    ${pad(kind, 44)} ${padl(v.toFixed(2), 7)}`);
  const orchestration = r.options.phases.reduce((a, p) => a + orchestrationCpu(r.metalflow.cpuSecondsByPhase[p]), 0) / r.options.hosts;
  const kubeSide = r.options.phases.reduce((a, p) => {
    const c = r.metalflow.cpuSecondsByPhase[p];
    return a + (c.controller ?? 0) + (c.apiserver ?? 0) + (c.etcd ?? 0);
  }, 0);
  out.push(`  orchestration CPU per host lifecycle ${orchestration.toFixed(2)} s, of which controller + kube-apiserver + etcd ${(kubeSide / r.options.hosts).toFixed(2)} s`);
  return out;
}

/** A phase's fleet operation: POST -> first host asked, -> first operation (half, all); runs, the last run's events. */
function fleetDetail(operations: FleetPhaseFigures[], p: Phase): string {
  const op = operations.find((o) => o.phase === p);
  const spread = op?.startToLastOperationMs !== undefined ? ` (half ${ms(op.startToMedianOperationMs)} ms, all ${ms(op.startToLastOperationMs)} ms)` : '';
  return op
    ? `${ms(op.startToFirstAskMs)} ms, ${ms(op.startToFirstOperationMs)} ms${spread}; ${op.runs} run(s), ${op.lastRunHistoryEvents} events (maxConcurrent ${op.maxConcurrent})`
    : 'one PUT per host (a fleet acts on existing hosts)';
}

/** --driver fleet: each phase's fleet operation under the main table. */
function fleetOperationRows(r: BenchResult, operations: FleetPhaseFigures[]): string[] {
  return r.options.phases.map((p) => `    ${pad(PHASE_LABEL[p], 26)} POST -> first host asked, -> first operation: ${fleetDetail(operations, p)}`);
}

/** --fleet: phase times of the fleet-driven run beside the per-host API driver's and the floor's. */
function formatFleet(r: BenchResult, f: NonNullable<BenchResult['fleet']>): string[] {
  const out = [`  ${pad('phase (wall time)', 28)} ${padl('fleet', 10)} ${padl('API', 9)} ${padl('floor', 9)}   fleet: POST -> first host asked, -> first operation; runs, last run's events`];
  for (const p of r.options.phases) {
    out.push(`  ${pad(PHASE_LABEL[p], 28)} ${padl(s(f.phaseMs[p]), 10)} ${padl(s(r.metalflow.phaseMs[p]), 9)} ${padl(r.floor ? s(r.floor.phaseMs[p]) : '-', 9)}   ${fleetDetail(f.operations, p)}`);
  }
  out.push(
    `  fleet run: history events per host lifecycle ${ms(f.temporal.historyEventsPerHost?.mean)} mean; Ironic requests per host ${f.ironicRequestsPerHost.toFixed(1)}; ` +
      `orchestration CPU per host lifecycle ${(r.options.phases.reduce((a, p) => a + orchestrationCpu(f.cpuSecondsByPhase[p]), 0) / r.options.hosts).toFixed(2)} s`,
  );
  return out;
}

/** Names a result so that runs never overwrite each other: the date, commit, driver, store and run id. */
export const resultFileName = (r: Pick<BenchResult | FloorOnlyResult, 'date' | 'commit' | 'options'>, runId: string): string =>
  `${r.date.slice(0, 10)}-${r.commit}-${r.options.driver ?? 'api'}${r.options.temporal === 'postgres' ? '-postgres' : ''}-${runId}.json`;

export { PHASES };
