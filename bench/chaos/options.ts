/**
 * What a chaos run does, from the command line (`npm run chaos -- …`) or a
 * test: how many hosts in which mode, which faults how often, and where its
 * stack lives (ports and a state dir of its own, apart from the demo, the
 * test stack and the benchmark).
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from '../../config/env';
import { randomSeed } from './random';

/**
 * Scheduled faults are injected at seeded points of the run; `ironic-proxy`
 * is on for the whole run (a share of the worker's Ironic requests).
 */
export const FAULT_KINDS = ['worker', 'api', 'controller', 'temporal', 'ironic', 'ironic-empty-db', 'bmc', 'ironic-proxy'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
export type ScheduledFault = Exclude<FaultKind, 'ironic-proxy'>;

export type Mode = 'api' | 'k8s' | 'both';
/**
 * `lifecycle`: hosts through their lifecycle under every fault (run.ts); `pivot`: a pivot A → B under kills (pivot.ts);
 * `site-move`: hosts moved between two sites with the central and both site workers killed mid-move (site-move.ts).
 */
export const SCENARIOS = ['lifecycle', 'pivot', 'site-move'] as const;
export type Scenario = (typeof SCENARIOS)[number];
/** Hosts a pivot round moves when --hosts is not given. */
export const PIVOT_CHAOS_HOSTS = 12;
/** Hosts a site-move round moves when --hosts is not given. */
export const SITE_MOVE_CHAOS_HOSTS = 4;

export interface ChaosOptions {
  scenario: Scenario;
  seed: number;
  hosts: number;
  mode: Mode;
  faults: FaultKind[];
  /** How many times each scheduled fault kind is injected. */
  faultsPerKind: number;
  /** Share of the worker's Ironic requests the fault proxy answers itself (5xx, 409) or leaves unanswered. */
  proxyShare: number;
  /** How long an unanswered Ironic request is held before its connection is dropped (the client's own timeout is 30 s). */
  noAnswerMs: number;
  /** Hosts on the `direct` provisioner with a live ISO, their BMC a sushy-tools system behind a proxy that can stop answering. */
  bmcHosts: number;
  /** A killed process is restarted after a pause drawn from this range. */
  pauseSeconds: [number, number];
  /** How long the BMCs stop answering. */
  blackholeSeconds: [number, number];
  /** A host that does not reach a step's state within this long is stuck. */
  stepTimeoutSeconds: number;
  /** Send the malformed-input corpus to the API after the faults (off in `make test`'s small round: its e2e file sends it). */
  malformedCorpus: boolean;
  /** METALFLOW_MAX_HISTORY_EVENTS for the host workflows: low, so hosts continue as new in the middle of the chaos. */
  maxHistoryEvents: number;
  portBase: number;
  stateDir: string;
  kubeStateDir: string;
  /** Use this running API server instead of starting one with scripts/kube.sh (tests share theirs). */
  kubeconfig?: string;
  /** A prebuilt workflow bundle (tests have one); otherwise bundled at start. */
  workflowBundle?: string;
  keepStack: boolean;
  /** The JSON result; default bench/results/chaos-<date>-<commit>-<seed>.json. */
  out?: string;
  log: (line: string) => void;
}

/** Ports of a chaos stack, from one base (22000: Temporal 22233, Ironic 22385, sushy 22800, API 22080, kube 22443). */
export function chaosPorts(base: number) {
  return {
    temporal: base + 233,
    temporalUi: base + 234,
    ironic: base + 385,
    sushy: base + 800,
    api: base + 80,
    etcd: base + 379,
    etcdPeer: base + 380,
    kubeApi: base + 443,
  };
}
export type ChaosPorts = ReturnType<typeof chaosPorts>;

export const DEFAULT_PORT_BASE = 22000;

export function defaultOptions(over: Partial<ChaosOptions> = {}): ChaosOptions {
  const hosts = over.hosts ?? 50;
  const mode = over.mode ?? 'both';
  const bmcHosts = over.bmcHosts ?? Math.min(hosts, Math.max(2, Math.round(hosts / 10)));
  return {
    scenario: 'lifecycle',
    seed: randomSeed(),
    hosts,
    mode,
    faults: availableFaults(FAULT_KINDS, mode, bmcHosts),
    faultsPerKind: 2,
    proxyShare: 0.2,
    noAnswerMs: 35_000,
    bmcHosts,
    pauseSeconds: [2, 20],
    blackholeSeconds: [20, 60],
    stepTimeoutSeconds: 1800,
    malformedCorpus: true,
    maxHistoryEvents: 80,
    portBase: DEFAULT_PORT_BASE,
    stateDir: join(REPO_ROOT, '.state', 'chaos-stack'),
    kubeStateDir: join(REPO_ROOT, '.state', 'chaos-kube'),
    keepStack: false,
    log: (line) => console.error(`[chaos ${new Date().toISOString().slice(11, 19)}] ${line}`),
    ...over,
  };
}

/** The kinds that exist in this run: the controller only in Kubernetes mode, the BMC fault only with BMC hosts. */
export function availableFaults(kinds: readonly FaultKind[], mode: Mode, bmcHosts: number): FaultKind[] {
  return kinds.filter((k) => (k !== 'controller' || mode !== 'api') && (k !== 'bmc' || bmcHosts > 0));
}

function range(name: string, v: string): [number, number] {
  const m = /^(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)$/.exec(v);
  if (!m || Number(m[1]) > Number(m[2])) throw new Error(`--${name} must be MIN-MAX seconds (e.g. 2-20), got "${v}"`);
  return [Number(m[1]), Number(m[2])];
}

function whole(name: string, v: string, min: number): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be a whole number of at least ${min}, got "${v}"`);
  return n;
}

export const USAGE = `npm run chaos -- [options]

  --scenario lifecycle|pivot|site-move
                            hosts through their lifecycle under every fault (lifecycle),
                            or a pivot of --hosts hosts (${PIVOT_CHAOS_HOSTS}) between two planes while plane A's
                            worker and Ironic B are each SIGKILLed --faults-per-kind times
                            (test/k8s/pivot.test.ts's round under SIGKILL, on the test stack's TEST_* ports),
                            or --hosts hosts (${SITE_MOVE_CHAOS_HOSTS}) moved between two sites while the central worker and both
                            sites' workers are SIGKILLed mid-move (test/integration/sites-move-chaos.test.ts)
  --seed N                  reproduce a run (printed at start and in the result)
  --hosts N                 hosts in all (50)
  --mode api|k8s|both       through the HTTP API, the CRD shim, or half each (both)
  --faults LIST             comma-separated, or all / none (all):
                            ${FAULT_KINDS.join(', ')}
  --faults-per-kind N       times each scheduled fault is injected (2)
  --proxy-share F           share of Ironic requests the fault proxy fails (0.2)
  --no-answer-ms N          how long an unanswered Ironic request hangs (35000)
  --bmc-hosts N             direct-provisioner Redfish hosts among --hosts (10%, at least 2)
  --pause-seconds A-B       pause before a killed process is restarted (2-20)
  --blackhole-seconds A-B   how long the BMCs stop answering (20-60)
  --step-timeout-seconds N  a host not at a step's state by then is stuck (1800)
  --max-history-events N    host workflows continue as new past this (80)
  --keep-stack              leave the chaos stack running afterwards
  --out FILE                the JSON result (bench/results/chaos-<date>-<commit>-<seed>.json)

Environment: METALFLOW_CHAOS_PORT_BASE (${DEFAULT_PORT_BASE}: Temporal +233, UI +234,
Ironic +385, sushy +800, API +80, etcd +379/+380, kube-apiserver +443),
METALFLOW_CHAOS_STATE_DIR (.state/chaos-stack; kube in .state/chaos-kube).`;

export function parseChaosArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): ChaosOptions | 'help' {
  const { values: v } = parseArgs({
    args: argv,
    strict: true,
    options: {
      scenario: { type: 'string' },
      seed: { type: 'string' },
      hosts: { type: 'string' },
      mode: { type: 'string' },
      faults: { type: 'string' },
      'faults-per-kind': { type: 'string' },
      'proxy-share': { type: 'string' },
      'no-answer-ms': { type: 'string' },
      'bmc-hosts': { type: 'string' },
      'pause-seconds': { type: 'string' },
      'blackhole-seconds': { type: 'string' },
      'step-timeout-seconds': { type: 'string' },
      'max-history-events': { type: 'string' },
      'keep-stack': { type: 'boolean' },
      out: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (v.help) return 'help';
  const mode = (v.mode ?? 'both') as Mode;
  if (!['api', 'k8s', 'both'].includes(mode)) throw new Error(`--mode must be api, k8s or both, got "${v.mode}"`);
  const scenario = (v.scenario ?? 'lifecycle') as Scenario;
  if (!SCENARIOS.includes(scenario)) throw new Error(`--scenario must be ${SCENARIOS.slice(0, -1).join(', ')} or ${SCENARIOS.at(-1)}, got "${v.scenario}"`);
  const hosts = v.hosts === undefined ? (scenario === 'pivot' ? PIVOT_CHAOS_HOSTS : scenario === 'site-move' ? SITE_MOVE_CHAOS_HOSTS : 50) : whole('hosts', v.hosts, 1);
  const bmcHosts = v['bmc-hosts'] === undefined ? undefined : whole('bmc-hosts', v['bmc-hosts'], 0);
  if (bmcHosts !== undefined && bmcHosts > hosts) throw new Error(`--bmc-hosts (${bmcHosts}) cannot exceed --hosts (${hosts})`);
  const base = defaultOptions({ hosts, mode, ...(bmcHosts === undefined ? {} : { bmcHosts }) });
  let faults = base.faults;
  if (v.faults !== undefined) {
    const asked = v.faults === 'all' ? [...FAULT_KINDS] : v.faults === 'none' ? [] : v.faults.split(',').map((s) => s.trim());
    const unknown = asked.filter((k) => !(FAULT_KINDS as readonly string[]).includes(k));
    if (unknown.length > 0) throw new Error(`--faults: unknown ${unknown.join(', ')} (known: ${FAULT_KINDS.join(', ')})`);
    faults = availableFaults(asked as FaultKind[], mode, base.bmcHosts);
    const dropped = asked.filter((k) => !faults.includes(k as FaultKind));
    if (dropped.length > 0) throw new Error(`--faults: ${dropped.join(', ')} cannot happen here (controller needs --mode k8s or both, bmc needs --bmc-hosts > 0)`);
  }
  const share = v['proxy-share'] === undefined ? base.proxyShare : Number(v['proxy-share']);
  if (!(share >= 0 && share < 1)) throw new Error(`--proxy-share must be a number from 0 to below 1, got "${v['proxy-share']}"`);
  const portBase = env.METALFLOW_CHAOS_PORT_BASE ? Number(env.METALFLOW_CHAOS_PORT_BASE) : DEFAULT_PORT_BASE;
  if (!Number.isInteger(portBase) || portBase < 1024 || portBase > 31_000) {
    throw new Error(`METALFLOW_CHAOS_PORT_BASE must be a whole number from 1024 to 31000 (ports up to base+800 stay below the kernel's ephemeral range), got "${env.METALFLOW_CHAOS_PORT_BASE}"`);
  }
  const stateDir = env.METALFLOW_CHAOS_STATE_DIR || base.stateDir;
  return {
    ...base,
    scenario,
    seed: v.seed === undefined ? base.seed : whole('seed', v.seed, 0),
    faults,
    faultsPerKind: v['faults-per-kind'] === undefined ? base.faultsPerKind : whole('faults-per-kind', v['faults-per-kind'], 1),
    proxyShare: share,
    noAnswerMs: v['no-answer-ms'] === undefined ? base.noAnswerMs : whole('no-answer-ms', v['no-answer-ms'], 1),
    pauseSeconds: v['pause-seconds'] === undefined ? base.pauseSeconds : range('pause-seconds', v['pause-seconds']),
    blackholeSeconds: v['blackhole-seconds'] === undefined ? base.blackholeSeconds : range('blackhole-seconds', v['blackhole-seconds']),
    stepTimeoutSeconds: v['step-timeout-seconds'] === undefined ? base.stepTimeoutSeconds : whole('step-timeout-seconds', v['step-timeout-seconds'], 10),
    maxHistoryEvents: v['max-history-events'] === undefined ? base.maxHistoryEvents : whole('max-history-events', v['max-history-events'], 20),
    portBase,
    stateDir,
    kubeStateDir: env.METALFLOW_CHAOS_STATE_DIR ? join(stateDir, 'kube') : base.kubeStateDir,
    keepStack: v['keep-stack'] ?? false,
    out: v.out,
  };
}
