/**
 * The pivot tests' two management planes on loopback, as hooks: plane A is
 * the shared test API server, the test stack's Ironic and Temporal's default
 * namespace; plane B a second kube-apiserver + etcd, a second Ironic
 * (scripts/stack.sh on its own state dir and port) and a Temporal namespace
 * of its own (host workflow ids are per namespace). Each plane has its own
 * worker and controller, each Ironic a recording proxy in front of it. B's
 * admission refuses a host named `refused` (an import failure to roll back).
 */
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { parse } from 'yaml';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import proto from '@temporalio/proto';
import { REPO_ROOT } from '../../config/env';
import { IRONIC_URL, TEMPORAL_ADDRESS, TEST_ENV, TEST_STATE_DIR } from '../support/env';
import { startProxyProcess } from '../support/ironic-proxy-process';
import { uniq, waitFor } from '../support/harness';
import { createTemporalNamespace } from '../support/temporal-namespace';
import { KUBE_BUILD_TIMEOUT_MS, KUBECONFIG, kubectl, startOwnKube, useKube, type KubeLease } from './kube-harness';
import { cleanNamespace, prepareNamespace, shim, type Shim } from './shim-harness';

type Proxy = Awaited<ReturnType<typeof startProxyProcess>>;

export interface PivotPlanes {
  readonly NS_B: string;
  /** Plane B's id in plane A's worker's METALFLOW_PIVOT_PLANES. */
  readonly PLANE_B: string;
  /** Plane A's id in plane B's worker's METALFLOW_PIVOT_PLANES (a pivot back). */
  readonly PLANE_A: string;
  readonly TQ_A: string;
  readonly TQ_B: string;
  readonly env: TestWorkflowEnvironment;
  readonly kubeB: { kubeconfig: string; stop(): void };
  readonly planeA: Shim;
  readonly proxyA: Proxy;
  readonly proxyB: Proxy;
  inA(args: string[], input?: string): ReturnType<typeof kubectl>;
  inB(args: string[], opts?: { input?: string; check?: boolean }): ReturnType<typeof kubectl>;
  /** scripts/stack.sh <cmd> ironic for plane B's Ironic. */
  stackB(cmd: string): void;
  /** SIGKILLs plane B's Ironic (its whole process group). */
  killIronicB(): void;
  /** Starts plane A's worker again (after a SIGKILL) with the same payload key. */
  restartWorkerA(): void;
}

/**
 * `ns`: the namespace of the file's hosts, or several (each round of a file in its own, so one round's pivot and
 * figures never see another's hosts); both planes' controllers watch them all, their Leases in the first.
 * `slot` keeps files that run at the same time apart: each slot has its own
 * plane B ports and state dir (0: pivot.test.ts, 1: pivot-restore).
 * `planeAUp`, when given, runs once plane A's worker and controller are started and before plane B is: what it
 * applies in A (hosts to provision) comes up while plane B's API server, Ironic and processes start.
 */
export function usePivotPlanes(ns: string | readonly string[], refused: string, slot = 0, planeAUp?: () => void): PivotPlanes {
  const namespaces = typeof ns === 'string' ? [ns] : [...ns];
  const watch = { METALFLOW_WATCH_NAMESPACE: namespaces.join(',') };
  const NS_B = `metalflow-plane-b-${slot}-${Date.now()}`;
  const TQ_A = uniq('tq-pivot-a');
  const TQ_B = uniq('tq-pivot-b');
  /** Plane B's own ports: beside this worktree's test ports (kube +1.., etcd -60, -52, -44, Ironic +1.. by slot), never another's. */
  const base = Number(process.env.TEST_KUBE_API_PORT ?? 23443);
  const B_PORTS = { etcd: base - 60 + 8 * slot, etcdPeer: base - 59 + 8 * slot, api: base + 1 + slot, ironic: Number(process.env.TEST_IRONIC_PORT ?? 16385) + 1 + slot };
  const B_STATE = join(TEST_STATE_DIR, '..', slot === 0 ? 'test-pivot-b' : `test-pivot-b${slot}`);
  const B_IRONIC_ENV = { ...TEST_ENV, METALFLOW_STATE_DIR: join(B_STATE, 'stack'), IRONIC_PORT: String(B_PORTS.ironic) };
  const KEY_A = randomBytes(32).toString('base64');

  let kubeA: KubeLease | undefined;
  let kubeB: { kubeconfig: string; stop(): void } | undefined;
  let env: TestWorkflowEnvironment | undefined;
  let planeA: Shim | undefined;
  let planeB: Shim | undefined;
  let proxyA: Proxy | undefined;
  let proxyB: Proxy | undefined;

  const inB = (args: string[], opts: { input?: string; check?: boolean } = {}) => kubectl(args, { ...opts, kubeconfig: kubeB!.kubeconfig });
  const stackB = (cmd: string) => {
    execFileSync('bash', [join(REPO_ROOT, 'scripts', 'stack.sh'), cmd, 'ironic'], { env: { ...process.env, ...B_IRONIC_ENV }, stdio: 'inherit' });
  };
  const temporal = (...args: string[]) => execFileSync(join(REPO_ROOT, '.venv', 'bin', 'temporal'), [...args, '--address', TEMPORAL_ADDRESS], { encoding: 'utf8' });
  const PLANE_B = 'plane-b';
  const PLANE_A = 'plane-a';
  const PLANES_FILE = join(B_STATE, 'pivot-planes.json');
  const PLANES_FILE_B = join(B_STATE, 'pivot-planes-b.json');
  const workerAEnv = () => ({ IRONIC_URL: proxyA!.url, METALFLOW_SECRET_KEY: KEY_A, METALFLOW_PIVOT_PLANES: PLANES_FILE });

  const refusePolicy = [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: 'pivot-test-refuse' },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: { resourceRules: [{ apiGroups: ['metal3.io'], apiVersions: ['*'], operations: ['CREATE'], resources: ['baremetalhosts'] }] },
        validations: [{ expression: `object.metadata.name != '${refused}'`, message: 'refused by the pivot test (an import failure injected in B)' }],
      },
    },
    { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: 'pivot-test-refuse' }, spec: { policyName: 'pivot-test-refuse', validationActions: ['Deny'] } },
  ];

  beforeAll(async () => {
    kubeA = useKube();
    for (const n of namespaces) prepareNamespace(n);
    rmSync(B_STATE, { recursive: true, force: true });
    mkdirSync(B_STATE, { recursive: true });
    // Each plane as the operator registers it for the other's worker: its kubeconfig, worker and namespace, its API server
    // allowed. Written before API server B runs (its kubeconfig's place and its URL are known): plane A starts first.
    const server = (kubeconfig: string) => (parse(readFileSync(kubeconfig, 'utf8')) as { clusters: Array<{ cluster: { server: string } }> }).clusters[0]!.cluster.server;
    const kubeconfigB = join(B_STATE, 'kube', 'kubeconfig');
    const serverB = `https://127.0.0.1:${B_PORTS.api}`;
    writeFileSync(PLANES_FILE, JSON.stringify({ allowedUrls: [serverB], planes: { [PLANE_B]: { kubeconfig: kubeconfigB, taskQueue: TQ_B, temporalNamespace: NS_B } } }));
    writeFileSync(PLANES_FILE_B, JSON.stringify({ allowedUrls: [server(KUBECONFIG)], planes: { [PLANE_A]: { kubeconfig: KUBECONFIG, taskQueue: TQ_A, temporalNamespace: 'default' } } }));
    // Plane A's processes start (seconds of CPU each) while plane B's peers do, instead of after them.
    env = await TestWorkflowEnvironment.createFromExistingServer({ address: TEMPORAL_ADDRESS });
    proxyA = await startProxyProcess(IRONIC_URL, join(B_STATE, 'ironic-a-requests.jsonl'));
    planeA = shim({ namespace: namespaces[0]!, taskQueue: TQ_A });
    planeA.startWorker(workerAEnv());
    planeA.startController(watch);
    planeAUp?.();
    // Ironic B starts (its schema, its health wait) while API server B does, instead of after it.
    const ironicB = promisify(execFile)('bash', [join(REPO_ROOT, 'scripts', 'stack.sh'), 'start', 'ironic'], { env: { ...process.env, ...B_IRONIC_ENV } });
    // Awaited below; a failure of API server B first must not leave it an unhandled rejection.
    ironicB.catch(() => undefined);
    kubeB = startOwnKube(join(B_STATE, 'kube'), B_PORTS);
    if (kubeB.kubeconfig !== kubeconfigB || server(kubeB.kubeconfig) !== serverB) {
      throw new Error(`API server B is at ${server(kubeB.kubeconfig)} (${kubeB.kubeconfig}), not where plane A's worker was told: ${serverB} (${kubeconfigB})`);
    }
    inB(['apply', '-f', join(REPO_ROOT, 'k8s', 'crds')]);
    inB(['wait', '--for=condition=Established', '--timeout=60s', 'crd/baremetalhosts.metal3.io', 'crd/hardwaredata.metal3.io']);
    inB(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: refusePolicy }) });
    const started = await ironicB;
    process.stdout.write(started.stdout);
    process.stderr.write(started.stderr);
    createTemporalNamespace(NS_B);
    proxyB = await startProxyProcess(`http://127.0.0.1:${B_PORTS.ironic}`, join(B_STATE, 'ironic-b-requests.jsonl'));
    const b = { METALFLOW_KUBECONFIG: kubeB.kubeconfig, TEMPORAL_NAMESPACE: NS_B };
    planeB = shim({ namespace: namespaces[0]!, taskQueue: TQ_B });
    planeB.startWorker({ ...b, IRONIC_URL: proxyB.url, METALFLOW_PIVOT_PLANES: PLANES_FILE_B });
    planeB.startController({ ...b, ...watch });
    // Both workers polling before any test pivots: a pivot's pre-check skips every host while no worker polls the
    // target's task queue (with plane A's hosts provisioning meanwhile, a test may be ready before worker B is).
    const service = env.connection.workflowService;
    for (const [namespace, name] of [['default', TQ_A], [NS_B, TQ_B]] as const) {
      await waitFor(`a worker polling task queue ${name}`, async () => {
        const answer = await service.describeTaskQueue({ namespace, taskQueue: { name }, taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW });
        return (answer.pollers ?? []).length > 0;
      }, { timeoutMs: 180_000, intervalMs: 250 });
    }
  }, KUBE_BUILD_TIMEOUT_MS);

  afterAll(async () => {
    planeA?.stop();
    planeB?.stop();
    proxyA?.stop();
    proxyB?.stop();
    if (kubeA) for (const n of namespaces) cleanNamespace(n);
    await env?.teardown();
    kubeA?.release();
    kubeB?.stop();
    try {
      stackB('stop');
      // Plane B's namespace and the host workflows it still runs go with it.
      temporal('operator', 'namespace', 'delete', '--namespace', NS_B, '--yes');
    } catch {
      // already stopped or gone
    }
  });

  const ready = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error('the pivot planes are not set up yet');
    return v;
  };
  return {
    NS_B,
    PLANE_B,
    PLANE_A,
    TQ_A,
    TQ_B,
    get env() { return ready(env); },
    get kubeB() { return ready(kubeB); },
    get planeA() { return ready(planeA); },
    get proxyA() { return ready(proxyA); },
    get proxyB() { return ready(proxyB); },
    inA: (args, input) => kubectl(args, { input }),
    inB,
    stackB,
    killIronicB: () => process.kill(-Number(readFileSync(join(B_STATE, 'stack', 'run', 'ironic.pid'), 'utf8')), 'SIGKILL'),
    restartWorkerA: () => {
      ready(planeA).startWorker(workerAEnv());
    },
  };
}
