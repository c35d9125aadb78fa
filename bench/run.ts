/**
 * `npm run bench`: N hosts through create -> available -> provisioned ->
 * available -> gone through metalflow's HTTP API (worker and API as child
 * processes), then the same through the floor driver (same Ironic calls, no
 * Temporal). Prints a table and writes
 * bench/results/<date>-<commit>-<driver>[-postgres]-<run id>.json (two runs of one commit on one
 * day used to share a name, and the second overwrote the first).
 *
 *   npm run bench -- [--hosts 100] [--concurrency N] [--redfish] [--scale]
 *                    [--floor-poll-ms 100] [--no-floor] [--idle-seconds S] [--max-history-events N]
 *                    [--out FILE] [--keep-stack] [--profile] [--temporal dev|postgres] [--workers N] [--fleet]
 *                    [--driver api|fleet]
 *
 * --max-history-events lowers the host workflows' continue-as-new threshold
 * (METALFLOW_MAX_HISTORY_EVENTS) so that a run shows continue-as-new at
 * fleet scale; a lifecycle is ~115 events, far below the default 4,000.
 * --scale is the 1,000-host run: --hosts 1000 --concurrency 200 --no-floor
 * --idle-seconds 60 --max-history-events 60, each overridable.
 * METALFLOW_WORKER_* variables in the environment reach the worker and are
 * recorded in the result.
 *
 * Starts its own stack (scripts/stack.sh; Temporal 21233, UI 21234, Ironic
 * 21385, sushy 21800, state .state/bench-stack) when it is not running, and
 * stops what it started unless --keep-stack (also when the run fails or is
 * interrupted). --temporal postgres runs the workflows on Temporal server on
 * PostgreSQL (scripts/temporal-pg.sh, ports 21500.., see
 * bench/temporal-profile.ts) instead of the dev server, with --workers 2 (two
 * worker processes on the run's task queue) unless --workers says otherwise.
 * --fleet runs the lifecycle a second time (namespace fleet-<id>, same worker
 * and API) with one fleet operation per phase (provision, deprovision, delete;
 * hosts are still created one PUT each) and prints its phase times beside the
 * per-host API driver's and the floor's (bench/fleet-driver.ts). --driver
 * fleet drives the only metalflow lifecycle that way instead (its figures,
 * targets and ratios are the fleet's), so a 1,000-host comparison can be two
 * runs on one commit: `--hosts 1000 --concurrency 200` (API and floor), then
 * the same with `--driver fleet --no-floor`.
 * `npm run bench -- cleanup [--temporal postgres] <namespace>...` removes what
 * a failed run left behind. `npm run bench -- compare <result.json>...` prints
 * the figures of several runs side by side (bench/compare.ts).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { REPO_ROOT } from '../config/env';
import { WORKFLOW_BUNDLE_OPTIONS } from '../workers/worker';
import { tokenHash } from '../api/auth/token-file';
import { IronicProxy, type RecordedRequest } from '../test/support/ironic-proxy';
import { cleanupNamespaces } from './cleanup';
import { compareFiles } from './compare';
import { makeHosts, PHASES, sleep, writeSushySystems, type BenchHost, type Phase, type SushySystem } from './common';
import { FloorDriver } from './floor';
import { FleetDriver } from './fleet-driver';
import { MetalflowDriver } from './metalflow';
import {
  API_URL,
  BENCH_PORTS,
  gitCommit,
  BENCH_STATE_DIR,
  IRONIC_URL,
  ironicSyncPowerStateInterval,
  SUSHY_URL,
  TEMPORAL_ADDRESS,
  ProcWatch,
  readProc,
  readProcGroup,
  servicePid,
  stack,
  startNodeChild,
  waitUntil,
  type Child,
  type StackService,
} from './procs';
import { evaluateTargets, formatTable, resultFileName, type BenchResult, type CpuByProcess, type DriverFigures } from './report';
import { temporalFigures } from './temporal';
import { parseOptions } from './options';
import { RunStack } from './run-stack';
import { parseTemporalProfile, temporalProfile, totalCpu } from './temporal-profile';
import { WorkerWatch } from './worker-watch';

const log = (msg: string): void => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}`);

/** Normalised request kind: node IDs and names become {node}, query values are dropped. */
function requestKind(r: RecordedRequest): string {
  const [path = '', query] = r.path.split('?');
  const p = path.replace(/^\/v1\/nodes\/[^/]+/, '/v1/nodes/{node}');
  const q = query ? `?${query.split('&').map((kv) => kv.split('=')[0]).filter((k) => k !== 'fields').join('&')}` : '';
  return `${r.method} ${p}${q === '?' ? '' : q}`;
}

/** A node PATCH's fields (top-level path segments, `extra/<key>` for extra), e.g. `instance_info+deploy_interface`. */
function patchFields(r: RecordedRequest): string {
  try {
    const ops = JSON.parse(r.body) as { path?: string }[];
    const fields = ops.map((o) => (o.path ?? '').split('/').slice(1, o.path?.startsWith('/extra/') ? 3 : 2).join('/'));
    return [...new Set(fields)].sort().join('+');
  } catch {
    return '?';
  }
}

/** A sushy systems file with one fake system per host (redfish mode). */
function redfishSystems(n: number): { file: string; systems: SushySystem[] } {
  const file = join(BENCH_STATE_DIR, `sushy-systems-${n}.json`);
  return { file, systems: writeSushySystems(file, n, { uuidPrefix: 'be4c0000', macPrefix: '52:54:01:be', namePrefix: 'bench-bm' }) };
}

async function sushySystemCount(): Promise<number> {
  const res = await request(`${SUSHY_URL}/redfish/v1/Systems`, {
    headers: { authorization: `Basic ${Buffer.from('admin:password').toString('base64')}` },
  });
  const body = (await res.body.json()) as { 'Members@odata.count'?: number };
  return body['Members@odata.count'] ?? 0;
}

const cleanup = (temporalAddress: string, ...namespaces: string[]): Promise<void> =>
  cleanupNamespaces(temporalAddress, IRONIC_URL, namespaces, 'benchmark run failed');

async function main(): Promise<void> {
  if (process.argv[2] === 'compare') {
    console.log(compareFiles(process.argv.slice(3)));
    return;
  }
  if (process.argv[2] === 'cleanup') {
    // npm run bench -- cleanup <namespace>...: what a failed run left behind (host namespaces bench-<id>, floor-<id>).
    const args = process.argv.slice(3);
    const pg = args[0] === '--temporal' ? parseTemporalProfile(args[1]) : 'dev';
    await cleanup(pg === 'dev' ? TEMPORAL_ADDRESS : temporalProfile(pg).address, ...args.slice(args[0] === '--temporal' ? 2 : 0));
    return;
  }
  const opts = parseOptions(process.argv.slice(2), new URL(import.meta.url));
  const runId = randomBytes(3).toString('hex');
  const namespace = `bench-${runId}`;
  const taskQueue = `bench-${runId}`;
  const fleetNamespace = `fleet-${runId}`;
  const phases: Phase[] = opts.redfish ? ['available', 'gone'] : [...PHASES];
  mkdirSync(BENCH_STATE_DIR, { recursive: true });
  const runDir = join(BENCH_STATE_DIR, 'runs', runId);
  mkdirSync(runDir, { recursive: true });
  log(`run ${runId}: ${opts.hosts} hosts, concurrency ${opts.concurrency}${opts.redfish ? ', redfish' : ''}; logs in ${runDir}`);

  // ---------------------------------------------------------- the stack ----
  const tprofile = temporalProfile(opts.temporal);
  const temporalAddress = tprofile.address;
  const runStack = new RunStack(tprofile, opts.keepStack, log);
  const stackEnv: Record<string, string> = {};
  let systems: { id: string; mac: string }[] | undefined;
  if (opts.redfish) {
    const gen = redfishSystems(opts.hosts);
    systems = gen.systems;
    Object.assign(stackEnv, { SUSHY_SYSTEMS_FILE: gen.file, SUSHY_POWER_DELAY: '0-0.5' });
  }
  runStack.start(['ironic', 'sushy'], stackEnv, JSON.stringify(BENCH_PORTS));

  const children: Child[] = [];
  const secretDir = join(runDir, 'secrets');
  const proxy = new IronicProxy(IRONIC_URL);
  let metalflow: MetalflowDriver | undefined;
  try {
    if (opts.redfish && (await sushySystemCount()) !== opts.hosts) {
      // Other systems than ours: restart sushy on a file with one system per host.
      log(`restarting sushy with ${opts.hosts} fake systems`);
      runStack.markStarted('sushy');
      stack(['restart', 'sushy'], stackEnv);
    }
    // --------------------------------------------- worker, API, proxy ----
    log('bundling workflows');
    const bundlePath = join(BENCH_STATE_DIR, 'workflow-bundle.js');
    const { code } = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
    writeFileSync(bundlePath, code);
    await proxy.start();
    const apiToken = randomBytes(24).toString('base64url');
    const tokensFile = join(runDir, 'api-tokens');
    writeFileSync(tokensFile, `${tokenHash(apiToken)} bench admin:*\n`, { mode: 0o600 });
    const childEnv = {
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_NAMESPACE: 'default',
      IRONIC_URL: proxy.url,
      METALFLOW_TASK_QUEUE: taskQueue,
      METALFLOW_STATE_DIR: runDir,
      METALFLOW_SECRET_DIR: secretDir,
      METALFLOW_SECRET_KEY: randomBytes(32).toString('base64'),
      METALFLOW_WORKFLOW_BUNDLE: bundlePath,
      METALFLOW_API_HOST: '127.0.0.1',
      METALFLOW_API_PORT: String(BENCH_PORTS.api),
      METALFLOW_API_TOKENS_FILE: tokensFile,
      // The audit log is a line per change: kept beside the API's log, off its stdout.
      METALFLOW_API_AUDIT_LOG: join(runDir, 'api-audit.log'),
      ...(opts.maxHistoryEvents !== undefined ? { METALFLOW_MAX_HISTORY_EVENTS: String(opts.maxHistoryEvents) } : {}),
      // The floor (a plain controller) has no provisioning limit: none here either unless one is set for the run.
      METALFLOW_PROVISIONING_LIMIT: process.env.METALFLOW_PROVISIONING_LIMIT ?? '0',
    };
    const prof = (name: string): string[] => (opts.profile ? ['--cpu-prof', '--cpu-prof-dir', join(runDir, `${name}-profile`)] : []);
    // --workers N: N worker processes polling the same task queue (the PostgreSQL profile's default is 2).
    const workers = Array.from({ length: opts.workers }, (_, i) => {
      const name = opts.workers === 1 ? 'worker' : `worker-${i + 1}`;
      return runStack.track(startNodeChild(name, 'workers/main.ts', childEnv, join(runDir, `${name}.log`), prof(name)));
    });
    children.push(...workers);
    const api = runStack.track(startNodeChild('api', 'api/main.ts', childEnv, join(runDir, 'api.log'), prof('api')));
    children.push(api);
    for (const w of workers) await waitUntil('the worker', () => w.output.some((l) => l.includes('metalflow worker on task queue')), 120_000, w);
    await waitUntil('the API', async () => (await request(`${API_URL}/healthz`)).statusCode === 200, 120_000, api);
    log(`worker pid ${workers.map((w) => w.pid).join(', ')}, API pid ${api.pid} on ${API_URL}, Ironic proxy ${proxy.url}`);

    const watches = {
      worker: new WorkerWatch(workers.map((w) => new ProcWatch('worker', () => readProc(w.pid)).start())),
      api: new ProcWatch('api', () => readProc(api.pid)).start(),
    };
    const pgid = (svc: StackService): number => servicePid(svc) ?? -1;
    const cpuNow = (): CpuByProcess => {
      const self = process.cpuUsage();
      return {
        temporal: totalCpu(tprofile.cpuByPart()),
        ironic: readProcGroup(pgid('ironic'))?.cpuSeconds ?? 0,
        worker: watches.worker.cpuSeconds(),
        api: watches.api.sample()?.cpuSeconds ?? 0,
        bench: (self.user + self.system) / 1e6,
      };
    };
    const cpuDelta = (a: CpuByProcess, b: CpuByProcess): CpuByProcess => ({
      temporal: b.temporal - a.temporal,
      ironic: b.ironic - a.ironic,
      worker: b.worker - a.worker,
      api: b.api - a.api,
      bench: b.bench - a.bench,
    });

    const hosts = makeHosts(opts.hosts, { redfishSystems: systems, sushyUrl: SUSHY_URL });
    const phaseTimeoutMs = Math.max(600_000, opts.hosts * 3_000);

    /** Runs the phases with a driver, timing them and counting Ironic requests. */
    const measure = async (
      label: string,
      runPhase: (p: Phase, hs: BenchHost[]) => Promise<void>,
      afterPhase?: (p: Phase) => Promise<void>,
      /** When the phase really ended, if the driver saw it before it returned (first look of a confirmed state). */
      endOf?: (p: Phase) => number | undefined,
    ): Promise<DriverFigures> => {
      const phaseMs = {} as Record<Phase, number>;
      const cumulativeMs = {} as Record<Phase, number>;
      const byPhase = {} as Record<Phase, number>;
      const cpuByPhase = {} as DriverFigures['cpuSecondsByPhase'];
      const kinds: Record<string, number> = {};
      for (const p of phases) {
        const start = Date.now();
        const cpu0 = cpuNow();
        proxy.requests.length = 0;
        await runPhase(p, hosts);
        const end = endOf?.(p) || Date.now();
        phaseMs[p] = end - start;
        // Sum of phase times: waits between phases (idle sampling) are not the lifecycle's.
        cumulativeMs[p] = Object.values(phaseMs).reduce((a, b) => a + b, 0);
        cpuByPhase[p] = cpuDelta(cpu0, cpuNow());
        byPhase[p] = proxy.requests.length / opts.hosts;
        for (const r of proxy.requests) kinds[requestKind(r)] = (kinds[requestKind(r)] ?? 0) + 1;
        log(`${label}: ${p} after ${(phaseMs[p] / 1000).toFixed(1)} s (${byPhase[p].toFixed(1)} Ironic requests per host)`);
        // Which fields each node PATCH wrote (issue 17: PATCHes per host against the floor's).
        const patches: Record<string, number> = {};
        for (const r of proxy.requests) if (r.method === 'PATCH') patches[patchFields(r)] = (patches[patchFields(r)] ?? 0) + 1;
        const listed = Object.entries(patches).map(([f, c]) => `${f} ${(c / opts.hosts).toFixed(2)}`);
        if (listed.length > 0) log(`${label}: ${p} node PATCHes per host by field: ${listed.join(', ')}`);
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
        ironicRequestsPerHostByKind: Object.fromEntries(Object.entries(kinds).map(([k, v]) => [k, v / opts.hosts])),
        cpuSecondsByPhase: cpuByPhase,
      };
    };

    // ------------------------------------------------------- metalflow ----
    const driverOptions = {
      apiUrl: API_URL,
      apiToken,
      temporalAddress,
      namespace,
      concurrency: opts.concurrency,
      pollMs: opts.hosts > 300 ? 1000 : 250,
      redfish: opts.redfish,
      phaseTimeoutMs,
    };
    metalflow = opts.driver === 'fleet' ? new FleetDriver(driverOptions) : new MetalflowDriver(driverOptions);
    let idleRssMiB: number | undefined;
    let idleHosts: number | undefined;
    let idleCpuShare: CpuByProcess | undefined;
    const idlePhase: Phase = opts.redfish ? 'available' : 'provisioned';
    const temporalCpu0 = tprofile.cpuByPart();
    const mf = await measure(
      opts.driver === 'fleet' ? 'metalflow (fleet operations)' : 'metalflow',
      (p, hs) => metalflow!.runPhase(p, hs),
      async (p) => {
        if (p !== idlePhase) return;
        log(`all hosts idle in ${p === 'available' ? 'available' : 'provisioned'}; sampling worker RSS for ${opts.idleSeconds} s`);
        let peak = 0;
        // The driver's looks are the benchmark's, not the fleet's: none while it is at rest.
        await metalflow!.pauseLooks();
        const cpu0 = cpuNow();
        const t0 = Date.now();
        for (let i = 0; i < opts.idleSeconds; i++) {
          await sleep(1000);
          peak = Math.max(peak, watches.worker.rssMiB());
        }
        const d = cpuDelta(cpu0, cpuNow());
        const secs = (Date.now() - t0) / 1000;
        // What a fleet at rest costs: Ironic's periodic tasks, the dev server, the hosts' power checks.
        idleCpuShare = { temporal: d.temporal / secs, ironic: d.ironic / secs, worker: d.worker / secs, api: d.api / secs, bench: d.bench / secs };
        idleRssMiB = peak;
        idleHosts = opts.hosts;
        metalflow!.resumeLooks();
      },
      (p) => metalflow!.lastReached(p),
    );
    await metalflow.stop();
    const fleetOperations = metalflow instanceof FleetDriver ? metalflow.fleets : undefined;
    const calls = metalflow.calls;
    const apiServerErrors = { count: metalflow.serverErrors.length, byMessage: {} as Record<string, number> };
    for (const e of metalflow.serverErrors) {
      const k = `${e.method} ${e.phase}: ${e.status} ${e.message}`;
      apiServerErrors.byMessage[k] = (apiServerErrors.byMessage[k] ?? 0) + 1;
    }
    metalflow = undefined;
    const temporalCpu1 = tprofile.cpuByPart();
    const temporalServer = {
      ...tprofile.info(),
      cpuSecondsByPart: Object.fromEntries(Object.entries(temporalCpu1).map(([k, v]) => [k, v - (temporalCpu0[k] ?? 0)])),
    };
    log('reading Temporal histories');
    const temporal = await temporalFigures(temporalAddress, namespace, calls, opts.hosts);
    // --fleet: the same lifecycle again, on the same worker and API, with a fleet operation per phase.
    let fleet: BenchResult['fleet'];
    if (opts.fleet) {
      const fleetDriver = new FleetDriver({ ...driverOptions, namespace: fleetNamespace });
      try {
        const figures = await measure('fleet', (p, hs) => fleetDriver.runPhase(p, hs), undefined, (p) => fleetDriver.lastReached(p));
        log('reading Temporal histories of the fleet run');
        fleet = { ...figures, operations: fleetDriver.fleets, temporal: await temporalFigures(temporalAddress, fleetNamespace, fleetDriver.calls, opts.hosts) };
      } finally {
        await fleetDriver.stop();
      }
    }
    watches.worker.stop();
    watches.api.stop();
    const workerFig = { ...watches.worker.figures(), idleRssMiB, idleHosts, idleState: idlePhase, idleCpuShare };
    const apiFig = { peakRssMiB: watches.api.peakRssMiB, cpuSeconds: watches.api.last?.cpuSeconds ?? 0 };
    for (const c of children) await c.stop();

    // ----------------------------------------------------------- floor ----
    const floorDriver = new FloorDriver({
      ironicUrl: proxy.url,
      namespace: `floor-${runId}`,
      concurrency: opts.concurrency,
      pollMs: opts.floorPollMs,
      redfish: opts.redfish,
    });
    // A floor that fails (Ironic saturated beyond what it retries) costs the run its comparison, not metalflow's figures.
    let floorError: string | undefined;
    const floor = opts.floor
      ? await measure('floor', (p, hs) => floorDriver.runPhase(p, hs)).catch(async (err: unknown) => {
          floorError = err instanceof Error ? err.message : String(err);
          log(`floor failed: ${floorError}; reporting metalflow without it`);
          await cleanup(temporalAddress, `floor-${runId}`).catch((e: unknown) => log(`cleanup failed: ${String(e)}`));
          return undefined;
        })
      : undefined;
    if (floorDriver.transientResends > 0) log(`floor: ${floorDriver.transientResends} inspection(s) sent again after Ironic failed them for its own saturation`);
    if (floorDriver.retries > 0) log(`floor: ${floorDriver.retries} Ironic request(s) retried (5xx answers, reads not answered)`);
    if (floorDriver.rejectedReplans > 0) log(`floor: ${floorDriver.rejectedReplans} verb(s) refused because the node had moved on (an earlier request landed after all); re-planned from a fresh read`);

    // ---------------------------------------------------------- report ----
    const ratio: BenchResult['ratio'] = {};
    for (const p of phases) if (floor && floor.phaseMs[p] > 0) ratio[p] = mf.phaseMs[p] / floor.phaseMs[p];
    const cpuModel = cpus()[0]?.model ?? 'unknown';
    const partial: Omit<BenchResult, 'targets'> = {
      version: 1,
      date: new Date().toISOString(),
      commit: gitCommit(),
      machine: { cpus: cpus().length, cpuModel, memGiB: Math.round(totalmem() / 2 ** 30), node: process.versions.node, os: `${process.platform} ${process.arch}` },
      options: {
        hosts: opts.hosts,
        concurrency: opts.concurrency,
        redfish: opts.redfish,
        floorPollMs: opts.floorPollMs,
        idleSeconds: opts.idleSeconds,
        phases,
        floor: opts.floor,
        maxHistoryEvents: opts.maxHistoryEvents,
        temporal: opts.temporal,
        workers: opts.workers,
        fleet: opts.fleet,
        driver: opts.driver,
        ironicSyncPowerStateInterval: ironicSyncPowerStateInterval(),
        observer: 'visibility-list',
        workerEnv: Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('METALFLOW_WORKER_')) as [string, string][]),
      },
      temporalServer,
      metalflow: { ...mf, temporal, worker: workerFig, api: apiFig, apiServerErrors, ...(fleetOperations ? { fleetOperations } : {}) },
      fleet,
      floor,
      ...(floorError ? { floorError } : {}),
      ratio,
    };
    const result: BenchResult = { ...partial, targets: evaluateTargets(partial) };
    const out = opts.out ?? join(REPO_ROOT, 'bench', 'results', resultFileName(result, runId));
    mkdirSync(join(out, '..'), { recursive: true });
    writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
    console.log(formatTable(result));
    console.log(`\nJSON: ${out}`);
  } catch (err) {
    // Leave nothing behind that would load the next run: this run's host workflows and Ironic nodes.
    log('run failed; terminating its host workflows and deleting its Ironic nodes');
    await cleanup(temporalAddress, namespace, fleetNamespace, `floor-${runId}`).catch((e: unknown) => log(`cleanup failed: ${String(e)}`));
    throw err;
  } finally {
    await metalflow?.stop().catch(() => undefined);
    for (const c of children) await c.stop().catch(() => undefined);
    await proxy.stop().catch(() => undefined);
    rmSync(secretDir, { recursive: true, force: true });
    runStack.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(1);
  },
);
