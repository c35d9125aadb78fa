/** Command-line options of `npm run bench` (the help text is the opening comment of bench/run.ts). */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseTemporalProfile, type TemporalProfileName } from './temporal-profile';

export const DRIVERS = ['api', 'fleet', 'floor', 'k8s'] as const;
export type Driver = (typeof DRIVERS)[number];
const isDriver = (v: string | undefined): v is Driver => (DRIVERS as readonly string[]).includes(v ?? '');

export interface Options {
  hosts: number;
  concurrency: number;
  redfish: boolean;
  /**
   * The lifecycle through Ironic's agent path: Redfish virtual media on sushy-tools fake systems, the fake
   * agent booted by the agent launcher, agent inspection, automated cleaning, direct deploy and cleaning
   * on deprovision (bench/agent-stack.ts), for metalflow and the floor alike.
   */
  agent: boolean;
  floorPollMs: number;
  /** Skip the floor (scale runs: no target compares with it at 1,000 hosts, and it doubles the run). */
  floor: boolean;
  idleSeconds: number;
  out?: string;
  keepStack: boolean;
  /** CPU profiles of the worker and the API (node --cpu-prof) in the run's folder. */
  profile: boolean;
  maxHistoryEvents?: number;
  /** Which Temporal runs the workflows: the dev server (SQLite) or Temporal server on PostgreSQL. */
  temporal: TemporalProfileName;
  /** Worker processes on the run's task queue: 1, or 2 with --temporal postgres (issue 17's profile). */
  workers: number;
  /** Also drive the lifecycle through fleet operations (issue 11). */
  fleet: boolean;
  /**
   * What drives the measured lifecycle: per-host API calls, one fleet operation per phase, or nothing
   * (`floor`: the floor alone). A 1,000-host comparison is then three runs of one commit (`--no-floor`,
   * `--driver fleet --no-floor`, `--driver floor`), each within a working session on a slow machine,
   * where `--fleet` would run all three lifecycles in one. `k8s`: BareMetalHosts on a kube-apiserver
   * of the run's own, through the controller (bench/k8s-driver.ts).
   */
  driver: Driver;
  /**
   * A workflow bundle already built from this checkout (the test run's, `test/bench/bench.test.ts`): used as it
   * is instead of bundling the workflows again (some 20 s of CPU).
   */
  workflowBundle?: string;
  /**
   * Worker or API processes started from a bundle of this checkout's entry point already built (the test run's,
   * `--process-bundle worker=FILE`): loaded in well under a second instead of transpiling some 300 modules.
   */
  processBundles: Partial<Record<ProcessBundleKind, string>>;
  /**
   * `--sites N`: the hosts spread round-robin over N sites, each with its own Ironic and site worker
   * (bench/sites.ts); 1 (the default) is the single-site run, no site configured.
   */
  sites: number;
}

/** The most sites a run may have (`--sites`): their Ironics take the ports right above the bench Ironic's (bench/sites.ts). */
export const MAX_SITES = 16;

export const PROCESS_BUNDLE_KINDS = ['worker', 'api'] as const;
export type ProcessBundleKind = (typeof PROCESS_BUNDLE_KINDS)[number];

export function parseOptions(argv: string[], helpFrom: URL): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      hosts: { type: 'string' },
      concurrency: { type: 'string' },
      redfish: { type: 'boolean', default: false },
      agent: { type: 'boolean', default: false },
      scale: { type: 'boolean', default: false },
      'floor-poll-ms': { type: 'string', default: '100' },
      'no-floor': { type: 'boolean' },
      'idle-seconds': { type: 'string' },
      out: { type: 'string' },
      'keep-stack': { type: 'boolean', default: false },
      profile: { type: 'boolean', default: false },
      'max-history-events': { type: 'string' },
      temporal: { type: 'string' },
      workers: { type: 'string' },
      fleet: { type: 'boolean', default: false },
      driver: { type: 'string', default: 'api' },
      'workflow-bundle': { type: 'string' },
      'process-bundle': { type: 'string', multiple: true },
      sites: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(readFileSync(helpFrom, 'utf8').split('*/')[0]!.replace(/^\/\*\*?|^ \* ?/gm, ''));
    process.exit(0);
  }
  const int = (name: string, v: string | undefined, fallback: number): number => {
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got "${v}"`);
    return n;
  };
  // --scale: the 1,000-host run, each default overridable.
  const scale = values.scale ?? false;
  const hosts = int('hosts', values.hosts, scale ? 1000 : 100);
  const maxHistory = values['max-history-events'] ?? (scale ? '60' : undefined);
  const temporal = parseTemporalProfile(values.temporal);
  const driver = values.driver;
  if (!isDriver(driver)) throw new Error(`--driver must be ${DRIVERS.join(', ')}, got "${driver}"`);
  if (driver === 'k8s' && values.fleet) throw new Error('--fleet drives a second lifecycle through the HTTP API; --driver k8s drives BareMetalHosts only: run the two separately and put them side by side with `npm run bench -- compare`');
  if (driver === 'fleet' && values.fleet) throw new Error('--fleet drives a second lifecycle with fleet operations beside the API one; with --driver fleet the only lifecycle is already driven so: leave one of them out');
  if (driver === 'floor' && (values.fleet || values['no-floor'])) throw new Error('--driver floor runs the floor alone: --fleet and --no-floor do not go with it');
  if (values.agent) {
    // --redfish is the create -> available -> gone profile on out-of-band inspection: a different lifecycle.
    if (values.redfish) throw new Error('--agent runs the whole lifecycle on Redfish virtual media (sushy-tools) through the agent; --redfish is the create -> delete profile with out-of-band inspection: pick one');
    // The fleet and BareMetalHost drivers provision with the fake-hardware image; only the API driver and the floor take the agent path's.
    if (driver === 'fleet' || driver === 'k8s' || values.fleet) throw new Error(`--agent drives the hosts through the per-host API (or --driver floor alone); --driver fleet, --driver k8s and --fleet do not take the agent path yet`);
  }
  const sites = int('sites', values.sites, 1);
  if (sites > MAX_SITES) throw new Error(`--sites must be at most ${MAX_SITES} (each site's Ironic takes a port above the bench Ironic's), got ${sites}`);
  if (sites > 1) {
    // The per-host API driver and the floor spread their hosts over the sites; the others do not name a site yet.
    const other = driver === 'fleet' || driver === 'k8s' ? `--driver ${driver}` : values.fleet ? '--fleet' : values.agent ? '--agent' : values.redfish ? '--redfish' : undefined;
    if (other) throw new Error(`--sites ${sites} spreads fake-hardware hosts driven through the per-host API (or --driver floor alone) over the sites; ${other} does not go with it yet`);
  }
  const processBundles: Partial<Record<ProcessBundleKind, string>> = {};
  for (const v of values['process-bundle'] ?? []) {
    const m = /^([a-z]+)=(.+)$/.exec(v);
    if (!m || !(PROCESS_BUNDLE_KINDS as readonly string[]).includes(m[1]!)) throw new Error(`--process-bundle must be KIND=FILE with KIND one of ${PROCESS_BUNDLE_KINDS.join(', ')}, got "${v}"`);
    processBundles[m[1] as ProcessBundleKind] = m[2]!;
  }
  return {
    hosts,
    concurrency: int('concurrency', values.concurrency, scale ? Math.min(hosts, 200) : hosts),
    redfish: values.redfish ?? false,
    agent: values.agent ?? false,
    floorPollMs: int('floor-poll-ms', values['floor-poll-ms'], 100),
    floor: driver === 'floor' || !(values['no-floor'] ?? scale),
    idleSeconds: int('idle-seconds', values['idle-seconds'], hosts >= 1000 ? 60 : 5),
    out: values.out,
    keepStack: values['keep-stack'] ?? false,
    profile: values.profile ?? false,
    maxHistoryEvents: maxHistory === undefined ? undefined : int('max-history-events', maxHistory, 0),
    temporal,
    workers: int('workers', values.workers, temporal === 'postgres' ? 2 : 1),
    fleet: values.fleet ?? false,
    driver,
    workflowBundle: values['workflow-bundle'],
    processBundles,
    sites,
  };
}
