/**
 * The controller scale round: N BareMetalHosts on a real kube-apiserver of
 * the round's own (scripts/kube.sh), the controller as its own process, the
 * host workflows a stub with nothing behind it (bench/controller-stub-workflow.ts),
 * every host's status pointing at one fake-hardware node of a running Ironic
 * so the firmware controller has something to read. Hardware is not the point:
 * what is measured is the controller and what it asks of Temporal.
 *
 *   npm run bench:controller -- --hosts 1000 [--rest-seconds 120] [--keep-kube]
 *
 * Temporal and Ironic are taken from TEMPORAL_ADDRESS and IRONIC_URL (e.g. a
 * test stack), the controller's settings from the environment (e.g.
 * METALFLOW_LEASE_SECONDS: on a machine so loaded that renewals take seconds,
 * a longer lease keeps the controller from losing it mid-round); the kube-apiserver's ports from BENCH_CTL_ETCD_PORT,
 * BENCH_CTL_ETCD_PEER_PORT, BENCH_CTL_KUBE_API_PORT (24379, 24380, 24443).
 * Prints and writes bench/findings/<date>-<commit>-controller-<id>.json:
 * Temporal calls per minute at rest (starts, updates, queries, describes, and
 * firmware workflows started as Temporal's visibility counts them), the
 * controller's CPU and RSS at rest, the time for every key to be reconciled
 * after a restart, and the per-host metric series before, with and after the hosts.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { REPO_ROOT } from '../config/env';
import { KubeRest } from '../clients/kubernetes/kube-rest';
import { emptyStatus } from '../model/host';
import { pool } from './common';
import { gitCommit, readProc, startNodeChild, waitUntil, type Child } from './procs';

const { values } = parseArgs({
  options: {
    hosts: { type: 'string', default: '1000' },
    'rest-seconds': { type: 'string', default: '120' },
    'keep-kube': { type: 'boolean', default: false },
  },
});
const HOSTS = Number(values.hosts);
const REST_SECONDS = Number(values['rest-seconds']);
if (!Number.isInteger(HOSTS) || HOSTS < 1) throw new Error(`--hosts must be a whole number of at least 1, got "${values.hosts}"`);
if (!(REST_SECONDS > 0)) throw new Error(`--rest-seconds must be a positive number, got "${values['rest-seconds']}"`);

const log = (m: string): void => console.log(`[bench:controller] ${new Date().toISOString().slice(11, 19)} ${m}`);
const TEMPORAL_ADDRESS = process.env.TEMPORAL_ADDRESS ?? `127.0.0.1:${process.env.TEMPORAL_PORT ?? 7233}`;
const IRONIC_URL = process.env.IRONIC_URL ?? `http://127.0.0.1:${process.env.IRONIC_PORT ?? 6385}`;
const KUBE_STATE_DIR = join(REPO_ROOT, '.state', 'bench-ctl-kube');
const KUBE_ENV = {
  METALFLOW_KUBE_STATE_DIR: KUBE_STATE_DIR,
  ETCD_PORT: process.env.BENCH_CTL_ETCD_PORT ?? '24379',
  ETCD_PEER_PORT: process.env.BENCH_CTL_ETCD_PEER_PORT ?? '24380',
  KUBE_API_PORT: process.env.BENCH_CTL_KUBE_API_PORT ?? '24443',
};
const KUBECONFIG = join(KUBE_STATE_DIR, 'kubeconfig');
const id = randomBytes(3).toString('hex');
const NS = `bench-ctl-${id}`;
const TASK_QUEUE = `bench-ctl-${id}`;
const METRICS_PORT = Number(process.env.BENCH_CTL_METRICS_PORT ?? 24391);

const kubeSh = (cmd: string): void => {
  execFileSync('bash', [join(REPO_ROOT, 'scripts', 'kube.sh'), cmd], { env: { ...process.env, ...KUBE_ENV }, stdio: 'inherit' });
};
const ironic = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
  const res = await fetch(`${IRONIC_URL}${path}`, {
    method,
    headers: { 'x-openstack-ironic-api-version': '1.81', 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`Ironic ${method} ${path}: ${res.status} ${await res.text()}`);
  return (res.status === 204 ? undefined : await res.json()) as T;
};
const scrape = async (): Promise<string> => (await fetch(`http://127.0.0.1:${METRICS_PORT}/metrics`)).text();
const samples = (text: string, name: string): string[] => text.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
const sumOf = (text: string, name: string, labels: Record<string, string> = {}): number =>
  samples(text, name)
    .filter((l) => Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
/** Series (sample lines) labelled with a host, and all metal3_/metalflow_ sample lines. */
const seriesCounts = (text: string) => {
  const lines = text.split('\n').filter((l) => l && !l.startsWith('#'));
  return { perHost: lines.filter((l) => l.includes('host="')).length, metal3AndMetalflow: lines.filter((l) => /^(metal3_|metalflow_)/.test(l)).length };
};

async function main(): Promise<void> {
  const started = Date.now();
  execFileSync('bash', [join(REPO_ROOT, 'scripts', 'kube-build.sh')], { stdio: 'inherit' });
  kubeSh('start');
  const children: Child[] = [];
  let worker: Worker | undefined;
  let nodeId: string | undefined;
  try {
    const kc = new KubeConfig();
    kc.loadFromFile(KUBECONFIG);
    const rest = await KubeRest.create(kc);
    applyCrds();
    await rest.call('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } } });

    const node = await ironic<{ uuid: string }>('POST', '/v1/nodes', { driver: 'fake-hardware', name: `bench-ctl-${id}` });
    nodeId = node.uuid;
    log(`Ironic node ${nodeId} (fake-hardware): every host's status names it`);

    const connection = await Connection.connect({ address: TEMPORAL_ADDRESS });
    const client = new Client({ connection });
    worker = await Worker.create({
      connection: await NativeConnection.connect({ address: TEMPORAL_ADDRESS }),
      taskQueue: TASK_QUEUE,
      workflowsPath: join(REPO_ROOT, 'bench', 'controller-stub-workflow.ts'),
    });
    const running = worker.run();
    void running.catch((err: unknown) => log(`stub worker stopped: ${String(err)}`));

    const controllerEnv = {
      METALFLOW_KUBECONFIG: KUBECONFIG,
      TEMPORAL_ADDRESS,
      IRONIC_URL,
      METALFLOW_TASK_QUEUE: TASK_QUEUE,
      METALFLOW_WATCH_NAMESPACE: NS,
      METALFLOW_LEASE_NAMESPACE: NS,
      METALFLOW_CONTROLLER_METRICS_PORT: String(METRICS_PORT),
      MALLOC_ARENA_MAX: '2',
    };
    const logFile = join(REPO_ROOT, '.state', `bench-ctl-${id}-controller.log`);
    mkdirSync(join(REPO_ROOT, '.state'), { recursive: true });
    let controller = startNodeChild('controller', join('k8s', 'controller', 'main.ts'), controllerEnv, logFile);
    children.push(controller);
    await waitUntil('the controller to hold the lease', () => controller.output.some((l) => l.includes('holds the lease')), 120_000, controller);
    await waitUntil('the controller metrics', async () => (await fetch(`http://127.0.0.1:${METRICS_PORT}/metrics`)).ok, 60_000, controller);
    const baseline = seriesCounts(await scrape());
    log(`baseline: ${baseline.perHost} per-host series, ${baseline.metal3AndMetalflow} metal3_/metalflow_ samples`);

    const names = Array.from({ length: HOSTS }, (_, i) => `h-${String(i).padStart(4, '0')}`);
    const bmhPath = `/apis/metal3.io/v1alpha1/namespaces/${NS}/baremetalhosts`;
    const createStart = Date.now();
    await pool(names, 16, async (name) => {
      await rest.call('POST', `/api/v1/namespaces/${NS}/secrets`, { body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: `${name}-bmc` }, stringData: { username: 'admin', password: 'pw' } } });
      const mac = `52:54:00:${randomBytes(3).toString('hex').match(/../g)!.join(':')}`;
      await rest.call('POST', bmhPath, {
        body: { apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', metadata: { name }, spec: { online: true, bootMACAddress: mac, bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` } } },
      });
    });
    log(`${HOSTS} hosts created in ${((Date.now() - createStart) / 1000).toFixed(1)} s`);
    const countRunning = () => client.workflow.count(`TaskQueue = '${TASK_QUEUE}' AND ExecutionStatus = 'Running'`).then((c) => c.count);
    await waitUntil(`${HOSTS} host workflows running`, async () => (await countRunning()) >= HOSTS, 30 * 60_000, controller);
    const firstReconcileS = (Date.now() - createStart) / 1000;
    log(`every host's workflow started ${firstReconcileS.toFixed(1)} s after the first create`);

    // The status a worker would have published: registered, available, on the one node.
    await pool(names, 16, async (name) => {
      await rest.call('PATCH', `${bmhPath}/${name}/status`, {
        body: { status: { ...emptyStatus(), operationalStatus: 'OK', poweredOn: false, provisioning: { state: 'available', ID: nodeId } } },
        contentType: 'application/merge-patch+json',
      });
    });
    const hfsPath = `/apis/metal3.io/v1alpha1/namespaces/${NS}/hostfirmwaresettings`;
    const hfsRead = async () => ((await rest.call<{ items: { status?: { conditions?: unknown[] } }[] }>('GET', hfsPath)).items ?? []).filter((h) => (h.status?.conditions ?? []).length > 0).length;
    await waitUntil(`${HOSTS} HostFirmwareSettings read from Ironic`, async () => (await hfsRead()) >= HOSTS, 30 * 60_000, controller);
    log(`every host's firmware read ${((Date.now() - createStart) / 1000).toFixed(1)} s after the first create`);
    // Let what the status writes queued settle before the window opens.
    let last = '';
    await waitUntil('the controller to settle', async () => {
      const now = samples(await scrape(), 'metalflow_controller_temporal_calls_total').join('\n') + samples(await scrape(), 'metal3_reconcile_total').length;
      const settled = now === last;
      last = now;
      if (!settled) await new Promise((r) => setTimeout(r, 5000));
      return settled;
    }, 10 * 60_000, controller);

    // At rest.
    const t0 = Date.now();
    const m0 = await scrape();
    const p0 = readProc(controller.pid)!;
    log(`at rest: measuring for ${REST_SECONDS} s`);
    await new Promise((r) => setTimeout(r, REST_SECONDS * 1000));
    const m1 = await scrape();
    const p1 = readProc(controller.pid)!;
    const minutes = (Date.now() - t0) / 60_000;
    const perMinute = (call: string) => Number(((sumOf(m1, 'metalflow_controller_temporal_calls_total', { call }) - sumOf(m0, 'metalflow_controller_temporal_calls_total', { call })) / minutes).toFixed(2));
    const firmwareWorkflows = (await client.workflow.count(`WorkflowType = 'firmwareInventoryWorkflow' AND StartTime > '${new Date(t0).toISOString()}'`)).count;
    const atRest = {
      seconds: Math.round((Date.now() - t0) / 1000),
      temporalPerMinute: { start: perMinute('start'), updateWithStart: perMinute('updateWithStart'), update: perMinute('update'), query: perMinute('query'), describe: perMinute('describe'), signal: perMinute('signal') },
      firmwareWorkflowsStarted: firmwareWorkflows,
      reconcilesPerMinute: Number(((sumOf(m1, 'metal3_reconcile_total') - sumOf(m0, 'metal3_reconcile_total')) / minutes).toFixed(2)),
      controllerCpuPercent: Number((((p1.cpuSeconds - p0.cpuSeconds) / ((Date.now() - t0) / 1000)) * 100).toFixed(2)),
      controllerRssMiB: Math.round(p1.rssMiB),
      controllerPeakRssMiB: Math.round(p1.hwmMiB),
    };
    log(`at rest: ${JSON.stringify(atRest)}`);
    const withHosts = seriesCounts(m1);

    // A restart: SIGTERM, a new process; the new one waits out the old one's lease.
    await controller.stop();
    const restartAt = Date.now();
    controller = startNodeChild('controller', join('k8s', 'controller', 'main.ts'), controllerEnv, logFile);
    children.push(controller);
    let leaseAt = 0;
    await waitUntil('the restarted controller to hold the lease', () => {
      if (controller.output.some((l) => l.includes('holds the lease'))) leaseAt = leaseAt || Date.now();
      return leaseAt > 0;
    }, 5 * 60_000, controller);
    await waitUntil(`every key reconciled after the restart`, async () => {
      const text = await scrape().catch(() => '');
      return samples(text, 'metal3_reconcile_total').filter((l) => !l.endsWith(' 0')).length >= HOSTS;
    }, 30 * 60_000, controller);
    const restart = {
      toLeaseSeconds: Number(((leaseAt - restartAt) / 1000).toFixed(1)),
      toAllReconciledSeconds: Number(((Date.now() - restartAt) / 1000).toFixed(1)),
      afterLeaseSeconds: Number(((Date.now() - leaseAt) / 1000).toFixed(1)),
    };
    const mr = await scrape();
    restartCalls = {
      updateWithStart: sumOf(mr, 'metalflow_controller_temporal_calls_total', { call: 'updateWithStart' }),
      update: sumOf(mr, 'metalflow_controller_temporal_calls_total', { call: 'update' }),
      query: sumOf(mr, 'metalflow_controller_temporal_calls_total', { call: 'query' }),
      describe: sumOf(mr, 'metalflow_controller_temporal_calls_total', { call: 'describe' }),
    };
    log(`restart: ${JSON.stringify(restart)}; calls so far ${JSON.stringify(restartCalls)}`);

    // Every host deleted: the controller hands the delete over, the stub completes, the finalizer goes.
    const deleteAt = Date.now();
    await rest.call('DELETE', bmhPath);
    await waitUntil('every host gone', async () => ((await rest.call<{ items: unknown[] | null }>('GET', bmhPath)).items ?? []).length === 0, 30 * 60_000, controller);
    const deleteSeconds = Number(((Date.now() - deleteAt) / 1000).toFixed(1));
    await waitUntil('the per-host series to go', async () => seriesCounts(await scrape()).perHost <= baseline.perHost, 5 * 60_000, controller).catch(() => undefined);
    const after = seriesCounts(await scrape());
    const result = {
      version: 1,
      kind: 'controller-scale',
      date: new Date().toISOString(),
      commit: gitCommit(),
      machine: { cpus: cpus().length, memGiB: Math.round(totalmem() / 2 ** 30), node: process.versions.node },
      options: { hosts: HOSTS, restSeconds: REST_SECONDS, leaseSeconds: Number(process.env.METALFLOW_LEASE_SECONDS ?? 15), workflows: 'stub (bench/controller-stub-workflow.ts)', ironic: 'one fake-hardware node for every host' },
      firstReconcileSeconds: Number(firstReconcileS.toFixed(1)),
      atRest,
      restart,
      restartCalls,
      deleteSeconds,
      series: { baseline, withHosts, afterDelete: after },
      wallSeconds: Math.round((Date.now() - started) / 1000),
    };
    const file = join(REPO_ROOT, 'bench', 'findings', `${result.date.slice(0, 10)}-${result.commit}-controller-${id}.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    console.log(JSON.stringify(result, null, 2));
    log(`written ${file}`);
  } finally {
    for (const c of children) await c.stop();
    worker?.shutdown();
    if (nodeId) await ironic('DELETE', `/v1/nodes/${nodeId}`).catch((err: unknown) => log(`Ironic node ${nodeId} not deleted: ${String(err)}`));
    if (!values['keep-kube']) kubeSh('stop');
  }
}

let restartCalls: Record<string, number> = {};

/** The project's CRDs, with the kubectl scripts/kube-build.sh built, and established. */
function applyCrds(): void {
  const kubectl = execFileSync('bash', [join(REPO_ROOT, 'scripts', 'kube-build.sh'), '--paths'], { encoding: 'utf8' }).match(/^KUBECTL=(.*)$/m)?.[1];
  if (!kubectl) throw new Error('kube-build.sh --paths: no KUBECTL');
  execFileSync(kubectl, ['--kubeconfig', KUBECONFIG, 'apply', '-f', join(REPO_ROOT, 'k8s', 'crds')], { stdio: 'inherit' });
  execFileSync(kubectl, ['--kubeconfig', KUBECONFIG, 'wait', '--for=condition=Established', '--timeout=60s', 'crd/baremetalhosts.metal3.io', 'crd/hostfirmwaresettings.metal3.io'], { stdio: 'inherit' });
}

await main();
process.exit(0);
