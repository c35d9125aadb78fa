/**
 * metalflow's processes in a bench run, started the same way by the lifecycle
 * bench (bench/metalflow-run.ts) and the at-rest bench (bench/at-rest.ts): the
 * workflows bundled, the worker(s) with their Ironic traffic through the
 * counting proxy, and the API, or with `--driver k8s` a kube-apiserver and
 * etcd of the run's own (bench/kube-stack.ts) and the controller in its place;
 * then the driver that moves the hosts, and a reader of every process's CPU.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_OPTIONS } from '../workers/worker';
import { tokenHash } from '../api/auth/token-file';
import type { IronicProxy } from './support/ironic-proxy';
import { FleetDriver } from './fleet-driver';
import { K8sDriver } from './k8s-driver';
import { BenchKube } from './kube-stack';
import { MetalflowDriver, type MetalflowOptions } from './metalflow';
import type { BenchImage } from './common';
import type { Driver, ProcessBundleKind } from './options';
import { API_URL, BENCH_PORTS, BENCH_STATE_DIR, ProcWatch, readProc, readProcGroup, servicePid, startNodeChild, waitUntil, type Child, type StackService } from './procs';
import type { AgentCpu, CpuByProcess } from './report';
import type { RunStack } from './run-stack';
import { totalCpu, type TemporalProfile } from './temporal-profile';
import { WorkerWatch } from './worker-watch';

export interface MetalflowProcsContext {
  /** What drives the hosts: the API per host, fleet operations, or BareMetalHosts (`k8s`, with the controller). */
  driver: Exclude<Driver, 'floor'>;
  runId: string;
  runDir: string;
  secretDir: string;
  namespace: string;
  /** The worker's task queue and Worker Deployment (one per run: its version becomes current at start). */
  taskQueue: string;
  proxy: IronicProxy;
  tprofile: TemporalProfile;
  runStack: RunStack;
  hosts: number;
  concurrency: number;
  redfish: boolean;
  /** What the hosts are provisioned with, when not the fake-hardware one (the agent path's). */
  image?: BenchImage;
  phaseTimeoutMs: number;
  /** With it, the kube-apiserver of `--driver k8s` is left running at the end. */
  keepStack: boolean;
  log: (msg: string) => void;
  workers?: number;
  workflowBundle?: string;
  processBundles?: Partial<Record<ProcessBundleKind, string>>;
  /** CPU profiles of the processes (node --cpu-prof) in the run's folder. */
  profile?: boolean;
  /** Added to every process's environment (e.g. the power sentinel's interval). */
  env?: Record<string, string>;
  /** CPU seconds of processes of the run beside metalflow's (the agent path's sushy and fake agent). */
  extraCpu?: () => AgentCpu;
  /**
   * `--sites N` (bench/sites.ts): the sites file every process gets, a site worker per site
   * (`workers/main.ts --site NAME`), and the CPU seconds of the sites' Ironics (counted in `ironic`).
   */
  sites?: { file: string; names: string[]; ironicCpu: () => number };
}

export interface ProcWatches {
  worker: WorkerWatch;
  /** `--sites N`: each site worker, by site. */
  siteWorkers?: { site: string; watch: ProcWatch }[];
  api?: ProcWatch;
  controller?: ProcWatch;
}

export interface MetalflowProcs {
  driver: MetalflowDriver | K8sDriver;
  /** What the driver was made with (a second driver of the run, e.g. --fleet's, takes the same). */
  driverOptions: MetalflowOptions;
  kube?: BenchKube;
  workers: Child[];
  /** The API, or the controller with --driver k8s. */
  front: Child;
  frontWatch: ProcWatch;
  watches: ProcWatches;
  cpuNow: () => CpuByProcess;
  /** Stops the driver and the processes, and the kube-apiserver unless keepStack; once. */
  stop(): Promise<void>;
}

/**
 * CPU seconds of the run's processes now (Temporal, Ironic, the workers, the API, this process; with
 * --driver k8s the controller, kube-apiserver and etcd instead of the API).
 */
export function cpuReader(tprofile: TemporalProfile, watches?: ProcWatches, kube?: BenchKube, extra?: () => AgentCpu, siteIronics?: () => number): () => CpuByProcess {
  const pgid = (svc: StackService): number => servicePid(svc) ?? -1;
  return () => {
    const self = process.cpuUsage();
    return {
      temporal: totalCpu(tprofile.cpuByPart()),
      // With --sites, every Ironic of the run: the default site's and each site's.
      ironic: (readProcGroup(pgid('ironic'))?.cpuSeconds ?? 0) + (siteIronics?.() ?? 0),
      worker: watches?.worker.cpuSeconds() ?? 0,
      api: watches?.api?.sample()?.cpuSeconds ?? 0,
      bench: (self.user + self.system) / 1e6,
      ...(kube ? { controller: watches?.controller?.sample()?.cpuSeconds ?? 0, apiserver: kube.cpuSeconds('apiserver'), etcd: kube.cpuSeconds('etcd') } : {}),
      ...extra?.(),
      ...(watches?.siteWorkers ? { siteWorkers: watches.siteWorkers.reduce((a, w) => a + (w.watch.sample()?.cpuSeconds ?? 0), 0) } : {}),
    };
  };
}

/** Starts the processes and makes the driver; what it started is stopped again when a start fails. */
export async function startMetalflow(ctx: MetalflowProcsContext): Promise<MetalflowProcs> {
  const { log, proxy, tprofile } = ctx;
  const children: Child[] = [];
  const kube = ctx.driver === 'k8s' ? new BenchKube(log) : undefined;
  let driver: MetalflowDriver | K8sDriver | undefined;
  let watches: ProcWatches | undefined;
  let frontWatch: ProcWatch | undefined;
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await driver?.stop().catch(() => undefined);
    watches?.worker.stop();
    for (const w of watches?.siteWorkers ?? []) w.watch.stop();
    frontWatch?.stop();
    for (const c of children) await c.stop().catch(() => undefined);
    if (!ctx.keepStack) kube?.stop();
  };
  try {
    if (kube) {
      ctx.runStack.alsoStop(() => kube.stop());
      await kube.start(ctx.namespace);
    }
    let bundlePath = join(BENCH_STATE_DIR, 'workflow-bundle.js');
    if (ctx.workflowBundle) {
      bundlePath = ctx.workflowBundle;
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
      TEMPORAL_ADDRESS: tprofile.address,
      TEMPORAL_NAMESPACE: 'default',
      IRONIC_URL: proxy.url,
      METALFLOW_TASK_QUEUE: ctx.taskQueue,
      // A Worker Deployment per run: its worker's version becomes current at start, as on a first install.
      METALFLOW_WORKER_DEPLOYMENT: ctx.taskQueue,
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
      // The floor (a plain controller) has no provisioning limit: none here either unless one is set for the run.
      METALFLOW_PROVISIONING_LIMIT: process.env.METALFLOW_PROVISIONING_LIMIT ?? '0',
      // Kubernetes mode: Secrets from the API server, status written back; API mode must not find one.
      METALFLOW_KUBECONFIG: kube?.kubeconfig ?? '',
      // --sites: the API checks each host's spec.site against it, the central worker and the site workers read it.
      ...(ctx.sites ? { METALFLOW_SITES_FILE: ctx.sites.file } : {}),
      ...ctx.env,
    };
    const prof = (name: string): string[] => (ctx.profile ? ['--cpu-prof', '--cpu-prof-dir', join(ctx.runDir, `${name}-profile`)] : []);
    const workerCount = ctx.workers ?? 1;
    // N worker processes polling the same task queue (the PostgreSQL profile's default is 2).
    const workers = Array.from({ length: workerCount }, (_, i) => {
      const name = workerCount === 1 ? 'worker' : `worker-${i + 1}`;
      return ctx.runStack.track(startNodeChild(name, ctx.processBundles?.worker ?? 'workers/main.ts', childEnv, join(ctx.runDir, `${name}.log`), prof(name)));
    });
    children.push(...workers);
    // The controller watches the run's namespace only, and holds its lease there.
    const front = kube
      ? startNodeChild('controller', 'k8s/controller/main.ts', { ...childEnv, METALFLOW_WATCH_NAMESPACE: ctx.namespace, METALFLOW_LEASE_NAMESPACE: ctx.namespace }, join(ctx.runDir, 'controller.log'), prof('controller'))
      : startNodeChild('api', ctx.processBundles?.api ?? 'api/main.ts', childEnv, join(ctx.runDir, 'api.log'), prof('api'));
    children.push(ctx.runStack.track(front));
    for (const w of workers) await waitUntil('the worker', () => w.output.some((l) => l.includes('metalflow worker on task queue')), 120_000, w);
    if (kube) await waitUntil('the controller', () => front.output.some((l) => l.includes('watching')), 120_000, front);
    else await waitUntil('the API', async () => (await request(`${API_URL}/healthz`)).statusCode === 200, 120_000, front);
    // --sites: a site worker per site (npm run worker -- --site NAME), the same environment as the central one. Started
    // once the central processes are up, so that the central worker starts as in a one-site run: N more processes
    // loading the same modules at once took it past its 120 s on a loaded machine. They load side by side, so the
    // wait allows for all of them.
    const siteWorkers = (ctx.sites?.names ?? []).map((site) => {
      const name = `site-worker-${site}`;
      const child = startNodeChild(name, ctx.processBundles?.worker ?? 'workers/main.ts', childEnv, join(ctx.runDir, `${name}.log`), prof(name), ['--site', site]);
      children.push(ctx.runStack.track(child));
      return { site, child };
    });
    const siteWorkerWaitMs = 120_000 + 60_000 * siteWorkers.length;
    for (const w of siteWorkers) await waitUntil(`the site worker of ${w.site}`, () => w.child.output.some((l) => l.includes('metalflow site worker of site')), siteWorkerWaitMs, w.child);
    if (siteWorkers.length > 0) log(`site workers: ${siteWorkers.map((w) => `${w.site} pid ${w.child.pid}`).join(', ')}`);
    log(`worker pid ${workers.map((w) => w.pid).join(', ')}, ${kube ? `controller pid ${front.pid}, kube-apiserver ${kube.kubeconfig}` : `API pid ${front.pid} on ${API_URL}`}, Ironic proxy ${proxy.url}`);

    frontWatch = new ProcWatch(kube ? 'controller' : 'api', () => readProc(front.pid)).start();
    watches = {
      worker: new WorkerWatch(workers.map((w) => new ProcWatch('worker', () => readProc(w.pid)).start())),
      ...(kube ? { controller: frontWatch } : { api: frontWatch }),
      ...(siteWorkers.length > 0 ? { siteWorkers: siteWorkers.map((w) => ({ site: w.site, watch: new ProcWatch(`site-worker-${w.site}`, () => readProc(w.child.pid)).start() })) } : {}),
    };
    const driverOptions: MetalflowOptions = {
      apiUrl: API_URL,
      apiToken,
      temporalAddress: tprofile.address,
      namespace: ctx.namespace,
      concurrency: ctx.concurrency,
      pollMs: ctx.hosts > 300 ? 1000 : 250,
      redfish: ctx.redfish,
      image: ctx.image,
      phaseTimeoutMs: ctx.phaseTimeoutMs,
    };
    driver = kube
      ? await K8sDriver.create({ ...driverOptions, kubeconfig: kube.kubeconfig })
      : ctx.driver === 'fleet'
        ? new FleetDriver(driverOptions)
        : new MetalflowDriver(driverOptions);
    return { driver, driverOptions, kube, workers, front, frontWatch, watches, cpuNow: cpuReader(tprofile, watches, kube, ctx.extraCpu, ctx.sites?.ironicCpu), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
