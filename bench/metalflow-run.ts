/**
 * The metalflow half of a benchmark run: bundles the workflows, starts the worker(s) and the API
 * as child processes (the worker's Ironic traffic through the counting proxy), drives the hosts
 * through the phases (per-host API calls or fleet operations), samples the fleet at rest, and
 * with --fleet drives the lifecycle again through fleet operations. Stops its processes before it
 * returns, so the floor that follows has the machine to itself.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_OPTIONS } from '../workers/worker';
import { tokenHash } from '../api/auth/token-file';
import type { IronicProxy } from './support/ironic-proxy';
import { PHASES, sleep, type BenchHost, type Phase } from './common';
import { eventBreakdown } from './event-breakdown';
import { FleetDriver } from './fleet-driver';
import { K8sDriver } from './k8s-driver';
import { BenchKube, countsDelta, writesOf, type KubeRequestCounts } from './kube-stack';
import { cpuDelta, measurePhases, type MeasureContext } from './measure';
import { MetalflowDriver } from './metalflow';
import type { Options } from './options';
import { API_URL, BENCH_PORTS, BENCH_STATE_DIR, ProcWatch, readProc, readProcGroup, servicePid, startNodeChild, waitUntil, type Child, type StackService } from './procs';
import type { BenchResult, CpuByProcess, KubeFigures } from './report';
import type { RunStack } from './run-stack';
import { temporalFigures } from './temporal';
import { totalCpu, type TemporalProfile } from './temporal-profile';
import { WorkerWatch } from './worker-watch';

/** Hosts whose histories are read for the events' causes. */
const EVENT_SAMPLE_HOSTS = 20;

export interface MetalflowRunContext {
  opts: Options;
  phases: Phase[];
  hosts: BenchHost[];
  runId: string;
  runDir: string;
  secretDir: string;
  namespace: string;
  fleetNamespace: string;
  proxy: IronicProxy;
  tprofile: TemporalProfile;
  runStack: RunStack;
  phaseTimeoutMs: number;
  log: (msg: string) => void;
}

export interface MetalflowRunResult {
  metalflow: BenchResult['metalflow'];
  fleet?: BenchResult['fleet'];
  temporalServer: BenchResult['temporalServer'];
}

/**
 * CPU seconds of the run's processes now (Temporal, Ironic, the workers, the API, this process; with
 * --driver k8s the controller, kube-apiserver and etcd instead of the API).
 */
export function cpuReader(tprofile: TemporalProfile, watches?: { worker: WorkerWatch; api?: ProcWatch; controller?: ProcWatch }, kube?: BenchKube): () => CpuByProcess {
  const pgid = (svc: StackService): number => servicePid(svc) ?? -1;
  return () => {
    const self = process.cpuUsage();
    return {
      temporal: totalCpu(tprofile.cpuByPart()),
      ironic: readProcGroup(pgid('ironic'))?.cpuSeconds ?? 0,
      worker: watches?.worker.cpuSeconds() ?? 0,
      api: watches?.api?.sample()?.cpuSeconds ?? 0,
      bench: (self.user + self.system) / 1e6,
      ...(kube ? { controller: watches?.controller?.sample()?.cpuSeconds ?? 0, apiserver: kube.cpuSeconds('apiserver'), etcd: kube.cpuSeconds('etcd') } : {}),
    };
  };
}

/** The API server's requests of each phase, per host: by kind, and the status writes and Events among them. */
function kubeFigures(phases: Phase[], byPhase: Record<Phase, KubeRequestCounts>, hosts: number): KubeFigures {
  const byKind: Record<string, number> = {};
  const perPhase = {} as Record<Phase, number>;
  for (const p of PHASES) {
    const counts = phases.includes(p) ? (byPhase[p] ?? {}) : {};
    perPhase[p] = Object.values(counts).reduce((a, b) => a + b, 0) / hosts;
    for (const [k, v] of Object.entries(counts)) byKind[k] = (byKind[k] ?? 0) + v / hosts;
  }
  const writes = writesOf(byKind);
  return {
    requestsPerHost: Object.values(perPhase).reduce((a, b) => a + b, 0),
    requestsPerHostByPhase: perPhase,
    requestsPerHostByKind: byKind,
    statusWritesPerHost: writes.statusWrites,
    eventsPerHost: writes.events,
  };
}

export async function runMetalflow(ctx: MetalflowRunContext): Promise<MetalflowRunResult> {
  const { opts, log, tprofile, proxy } = ctx;
  const temporalAddress = tprofile.address;
  const children: Child[] = [];
  let metalflow: MetalflowDriver | K8sDriver | undefined;
  // --driver k8s: a kube-apiserver of the run's own, and the controller in place of the API.
  const kube = opts.driver === 'k8s' ? new BenchKube(log) : undefined;
  try {
    if (kube) {
      ctx.runStack.alsoStop(() => kube.stop());
      await kube.start(ctx.namespace);
    }
    let bundlePath = join(BENCH_STATE_DIR, 'workflow-bundle.js');
    if (opts.workflowBundle) {
      bundlePath = opts.workflowBundle;
      log(`workflows from the bundle ${bundlePath}`);
    } else {
      log('bundling workflows');
      const { code } = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
      writeFileSync(bundlePath, code);
    }
    const apiToken = randomBytes(24).toString('base64url');
    const tokensFile = join(ctx.runDir, 'api-tokens');
    writeFileSync(tokensFile, `${tokenHash(apiToken)} bench admin:*\n`, { mode: 0o600 });
    const childEnv = {
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_NAMESPACE: 'default',
      IRONIC_URL: proxy.url,
      METALFLOW_TASK_QUEUE: `bench-${ctx.runId}`,
      // A Worker Deployment per run: its worker's version becomes current at start, as on a first install.
      METALFLOW_WORKER_DEPLOYMENT: `bench-${ctx.runId}`,
      METALFLOW_STATE_DIR: ctx.runDir,
      METALFLOW_SECRET_DIR: ctx.secretDir,
      METALFLOW_SECRET_KEY: randomBytes(32).toString('base64'),
      METALFLOW_WORKFLOW_BUNDLE: bundlePath,
      // The bench's images are served on loopback, which a worker refuses unless let through.
      METALFLOW_IMAGE_FETCH_ALLOW: '127.0.0.0/8',
      METALFLOW_API_HOST: '127.0.0.1',
      METALFLOW_API_PORT: String(BENCH_PORTS.api),
      METALFLOW_API_TOKENS_FILE: tokensFile,
      // The audit log is a line per change: kept beside the API's log, off its stdout.
      METALFLOW_API_AUDIT_LOG: join(ctx.runDir, 'api-audit.log'),
      ...(opts.maxHistoryEvents !== undefined ? { METALFLOW_MAX_HISTORY_EVENTS: String(opts.maxHistoryEvents) } : {}),
      // The floor (a plain controller) has no provisioning limit: none here either unless one is set for the run.
      METALFLOW_PROVISIONING_LIMIT: process.env.METALFLOW_PROVISIONING_LIMIT ?? '0',
      // Kubernetes mode: Secrets from the API server, status written back; API mode must not find one.
      METALFLOW_KUBECONFIG: kube?.kubeconfig ?? '',
    };
    const prof = (name: string): string[] => (opts.profile ? ['--cpu-prof', '--cpu-prof-dir', join(ctx.runDir, `${name}-profile`)] : []);
    // --workers N: N worker processes polling the same task queue (the PostgreSQL profile's default is 2).
    const workers = Array.from({ length: opts.workers }, (_, i) => {
      const name = opts.workers === 1 ? 'worker' : `worker-${i + 1}`;
      return ctx.runStack.track(startNodeChild(name, opts.processBundles.worker ?? 'workers/main.ts', childEnv, join(ctx.runDir, `${name}.log`), prof(name)));
    });
    children.push(...workers);
    // The controller watches the run's namespace only, and holds its lease there.
    const front = kube
      ? startNodeChild('controller', 'k8s/controller/main.ts', { ...childEnv, METALFLOW_WATCH_NAMESPACE: ctx.namespace, METALFLOW_LEASE_NAMESPACE: ctx.namespace }, join(ctx.runDir, 'controller.log'), prof('controller'))
      : startNodeChild('api', opts.processBundles.api ?? 'api/main.ts', childEnv, join(ctx.runDir, 'api.log'), prof('api'));
    children.push(ctx.runStack.track(front));
    for (const w of workers) await waitUntil('the worker', () => w.output.some((l) => l.includes('metalflow worker on task queue')), 120_000, w);
    if (kube) await waitUntil('the controller', () => front.output.some((l) => l.includes('watching')), 120_000, front);
    else await waitUntil('the API', async () => (await request(`${API_URL}/healthz`)).statusCode === 200, 120_000, front);
    log(`worker pid ${workers.map((w) => w.pid).join(', ')}, ${kube ? `controller pid ${front.pid}, kube-apiserver ${kube.kubeconfig}` : `API pid ${front.pid} on ${API_URL}`}, Ironic proxy ${proxy.url}`);

    const frontWatch = new ProcWatch(kube ? 'controller' : 'api', () => readProc(front.pid)).start();
    const watches = {
      worker: new WorkerWatch(workers.map((w) => new ProcWatch('worker', () => readProc(w.pid)).start())),
      ...(kube ? { controller: frontWatch } : { api: frontWatch }),
    };
    const cpuNow = cpuReader(tprofile, watches, kube);
    const mctx: MeasureContext = { phases: ctx.phases, hosts: ctx.hosts, proxy, cpuNow, log };

    const driverOptions = {
      apiUrl: API_URL,
      apiToken,
      temporalAddress,
      namespace: ctx.namespace,
      concurrency: opts.concurrency,
      pollMs: opts.hosts > 300 ? 1000 : 250,
      redfish: opts.redfish,
      phaseTimeoutMs: ctx.phaseTimeoutMs,
    };
    const driver = kube
      ? await K8sDriver.create({ ...driverOptions, kubeconfig: kube.kubeconfig })
      : opts.driver === 'fleet'
        ? new FleetDriver(driverOptions)
        : new MetalflowDriver(driverOptions);
    metalflow = driver;
    // The API server's requests by kind in each phase, read from its own counters around the phase.
    const kubeByPhase = {} as Record<Phase, KubeRequestCounts>;
    const runPhase = async (p: Phase, hs: BenchHost[]): Promise<void> => {
      const before = await kube?.requestCounts();
      await driver.runPhase(p, hs);
      if (kube && before) kubeByPhase[p] = countsDelta(before, await kube.requestCounts());
    };
    let idleRssMiB: number | undefined;
    let idleHosts: number | undefined;
    let idleCpuShare: CpuByProcess | undefined;
    const idlePhase: Phase = opts.redfish ? 'available' : 'provisioned';
    const temporalCpu0 = tprofile.cpuByPart();
    const mf = await measurePhases(
      mctx,
      opts.driver === 'fleet' ? 'metalflow (fleet operations)' : kube ? 'metalflow (BareMetalHosts)' : 'metalflow',
      runPhase,
      async (p) => {
        if (p !== idlePhase) return;
        log(`all hosts idle in ${p === 'available' ? 'available' : 'provisioned'}; sampling worker RSS for ${opts.idleSeconds} s`);
        let peak = 0;
        // The driver's looks are the benchmark's, not the fleet's: none while it is at rest.
        await driver.pauseLooks();
        const cpu0 = cpuNow();
        const t0 = Date.now();
        for (let i = 0; i < opts.idleSeconds; i++) {
          await sleep(1000);
          peak = Math.max(peak, watches.worker.rssMiB());
        }
        const secs = (Date.now() - t0) / 1000;
        // What a fleet at rest costs: Ironic's periodic tasks, the dev server, the hosts' power checks.
        idleCpuShare = cpuDelta(cpu0, cpuNow(), 1 / secs);
        idleRssMiB = peak;
        idleHosts = opts.hosts;
        driver.resumeLooks();
      },
      (p) => driver.lastReached(p),
    );
    await driver.stop();
    metalflow = undefined;
    const fleetOperations = driver instanceof FleetDriver ? driver.fleets : undefined;
    const apiServerErrors = { count: driver.serverErrors.length, byMessage: {} as Record<string, number> };
    for (const e of driver.serverErrors) {
      const k = `${e.method} ${e.phase}: ${e.status} ${e.message}`;
      apiServerErrors.byMessage[k] = (apiServerErrors.byMessage[k] ?? 0) + 1;
    }
    const temporalCpu1 = tprofile.cpuByPart();
    const temporalServer = {
      ...tprofile.info(),
      cpuSecondsByPart: Object.fromEntries(Object.entries(temporalCpu1).map(([k, v]) => [k, v - (temporalCpu0[k] ?? 0)])),
    };
    log('reading Temporal histories');
    const temporal = await temporalFigures(temporalAddress, ctx.namespace, driver.calls, opts.hosts);
    // What the events are for, from a sample of the hosts' histories (every history of a large run would take long to read).
    const causes = await eventBreakdown(temporalAddress, ctx.namespace, EVENT_SAMPLE_HOSTS);
    const historyEventsByCause = { hosts: causes.hosts, perHost: causes.byCause };
    // --fleet: the same lifecycle again, on the same worker and API, with a fleet operation per phase.
    let fleet: BenchResult['fleet'];
    if (opts.fleet) {
      const fleetDriver = new FleetDriver({ ...driverOptions, namespace: ctx.fleetNamespace });
      metalflow = fleetDriver;
      const figures = await measurePhases(mctx, 'fleet', (p, hs) => fleetDriver.runPhase(p, hs), undefined, (p) => fleetDriver.lastReached(p));
      await fleetDriver.stop();
      metalflow = undefined;
      log('reading Temporal histories of the fleet run');
      fleet = { ...figures, operations: fleetDriver.fleets, temporal: await temporalFigures(temporalAddress, ctx.fleetNamespace, fleetDriver.calls, opts.hosts) };
    }
    watches.worker.stop();
    frontWatch.stop();
    const worker = { ...watches.worker.figures(), idleRssMiB, idleHosts, idleState: idlePhase, idleCpuShare };
    const frontFig = { peakRssMiB: frontWatch.peakRssMiB, cpuSeconds: frontWatch.last?.cpuSeconds ?? 0 };
    const apiFig = kube ? { peakRssMiB: 0, cpuSeconds: 0 } : frontFig;
    if (kube) await kube.clear(ctx.namespace);
    return {
      metalflow: {
        ...mf,
        temporal,
        worker,
        api: apiFig,
        apiServerErrors,
        historyEventsByCause,
        ...(fleetOperations ? { fleetOperations } : {}),
        ...(kube ? { controller: frontFig, kube: kubeFigures(ctx.phases, kubeByPhase, opts.hosts) } : {}),
      },
      fleet,
      temporalServer,
    };
  } finally {
    await metalflow?.stop().catch(() => undefined);
    for (const c of children) await c.stop().catch(() => undefined);
    // The floor that follows has the machine to itself.
    if (!opts.keepStack) kube?.stop();
  }
}
