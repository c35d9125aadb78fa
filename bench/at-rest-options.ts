/** Command-line options of `npm run bench:at-rest` (the help text is the opening comment of bench/at-rest.ts). */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

/** What enrols the hosts: metalflow's HTTP API, or BareMetalHosts on a kube-apiserver of the run's own (the controller). */
export const AT_REST_DRIVERS = ['api', 'k8s'] as const;
export type AtRestDriver = (typeof AT_REST_DRIVERS)[number];

export interface AtRestOptions {
  driver: AtRestDriver;
  hosts: number;
  restSeconds: number;
  concurrency: number;
  /** The power sentinel's interval (METALFLOW_POWER_SENTINEL_SECONDS); 0: off. */
  sentinelSeconds: number;
  /** Each host's own power check (METALFLOW_POWER_CHECK_SECONDS); 0: none. */
  powerCheckSeconds: number;
  keepStack: boolean;
  /** After the rest window: Ironic restarted on an empty database, every host's re-registration timed. */
  loseIronicDb: boolean;
  /** How long the hosts have to register again before the run reports the ones that did not. */
  recoveryTimeoutSeconds: number;
  /** With loseIronicDb: hosts of the re-registration floor (bench/rereg-floor.ts) once the fleet is back; 0: none. */
  floorHosts: number;
  /** The floor's hosts driven at once. */
  floorConcurrency: number;
}

/** The re-registration floor's hosts (at most the fleet's) and how many at once: enough for a per-host figure, little of the run's time. */
export const DEFAULT_FLOOR_HOSTS = 20;
export const DEFAULT_FLOOR_CONCURRENCY = 4;

/** The day's limit of every interval the worker takes (config/env.ts). */
const MAX_SECONDS = 86_400;

/**
 * The recovery window's default: 5 minutes, 2 s per host at fleet scale. Every host registers again at once, and
 * back in its resting state takes about as long as enrolling the fleet did (1,000 hosts: 1,100-1,500 s on 2 cores).
 */
export const defaultRecoveryTimeoutSeconds = (hosts: number): number => Math.max(300, hosts * 2);

function whole(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < min || n > max) {
    throw new Error(`--${name}: must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return n;
}

export function parseAtRestOptions(argv: string[], helpFrom: URL): AtRestOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        driver: { type: 'string' },
        hosts: { type: 'string' },
        'rest-seconds': { type: 'string' },
        concurrency: { type: 'string' },
        'sentinel-seconds': { type: 'string' },
        'power-check-seconds': { type: 'string' },
        'keep-stack': { type: 'boolean', default: false },
        'lose-ironic-db': { type: 'boolean', default: false },
        'recovery-timeout-seconds': { type: 'string' },
        'floor-hosts': { type: 'string' },
        'floor-concurrency': { type: 'string' },
        help: { type: 'boolean', default: false },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    // node's own message names the option; say what is accepted beside it.
    throw new Error(`${(err as Error).message}; accepted: --driver api|k8s, --hosts N, --rest-seconds N, --concurrency N, --sentinel-seconds N, --power-check-seconds N, --keep-stack, --lose-ironic-db, --recovery-timeout-seconds N, --floor-hosts N, --floor-concurrency N, --help`);
  }
  if (values.help) {
    console.log(readFileSync(helpFrom, 'utf8').split('*/')[0]!.replace(/^\/\*\*?|^ \* ?/gm, ''));
    process.exit(0);
  }
  const driver = values.driver ?? 'api';
  if (!(AT_REST_DRIVERS as readonly string[]).includes(driver)) {
    throw new Error(`--driver: must be ${AT_REST_DRIVERS.join(' or ')} (hosts enrolled through the HTTP API, or as BareMetalHosts through the controller), got ${JSON.stringify(driver)}`);
  }
  const hosts = whole('hosts', values.hosts, 200, 1, 10_000);
  const sentinelSeconds = whole('sentinel-seconds', values['sentinel-seconds'], 30, 0, MAX_SECONDS);
  const powerCheckSeconds = whole('power-check-seconds', values['power-check-seconds'], 300, 0, MAX_SECONDS);
  const loseIronicDb = values['lose-ironic-db'] ?? false;
  if (values['recovery-timeout-seconds'] !== undefined && !loseIronicDb) {
    throw new Error('--recovery-timeout-seconds: bounds the recovery after --lose-ironic-db; give --lose-ironic-db too, or leave it out');
  }
  for (const name of ['floor-hosts', 'floor-concurrency'] as const) {
    if (values[name] !== undefined && !loseIronicDb) throw new Error(`--${name}: sets the re-registration floor run after --lose-ironic-db; give --lose-ironic-db too, or leave it out`);
  }
  if (loseIronicDb && sentinelSeconds === 0 && powerCheckSeconds === 0) {
    throw new Error('--lose-ironic-db: with --sentinel-seconds 0 and --power-check-seconds 0 nothing checks the hosts at rest, so none would notice its node gone; keep one of them above 0');
  }
  return {
    driver: driver as AtRestDriver,
    hosts,
    restSeconds: whole('rest-seconds', values['rest-seconds'], 180, 10, MAX_SECONDS),
    concurrency: whole('concurrency', values.concurrency, 50, 1, 1_000),
    sentinelSeconds,
    powerCheckSeconds,
    keepStack: values['keep-stack'] ?? false,
    loseIronicDb,
    recoveryTimeoutSeconds: whole('recovery-timeout-seconds', values['recovery-timeout-seconds'], defaultRecoveryTimeoutSeconds(hosts), 10, MAX_SECONDS),
    floorHosts: whole('floor-hosts', values['floor-hosts'], Math.min(hosts, DEFAULT_FLOOR_HOSTS), 0, 10_000),
    floorConcurrency: whole('floor-concurrency', values['floor-concurrency'], DEFAULT_FLOOR_CONCURRENCY, 1, 1_000),
  };
}
