/**
 * The shim's processes for a k8s test file: a worker in Kubernetes mode and
 * the controller, each its own process (the tests block their own event loop
 * in kubectl calls), on the test stack's Temporal and Ironic, driving one
 * namespace of the shared test API server.
 */
import { TEST_FETCH_ENV } from '../support/fetch-policy';
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll } from 'vitest';
import type { Client } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { REPO_ROOT } from '../../config/env';
import { IRONIC_URL, TEMPORAL_ADDRESS, WORKFLOW_BUNDLE_PATH } from '../support/env';
import { processArgs } from '../support/process-bundles';
import { KUBE_BUILD_TIMEOUT_MS, KUBECONFIG, kubectl, useKube, type KubeLease } from './kube-harness';

export interface Shim {
  /** `env` overrides the worker's settings (e.g. IRONIC_URL through a recording proxy); `args` go to it (`--site NAME`). */
  startWorker(env?: Record<string, string>, args?: string[]): ChildProcess;
  /** `env` overrides the controller's settings (e.g. METALFLOW_CONTROLLER_CONCURRENCY). */
  startController(env?: Record<string, string>): ChildProcess;
  /** What a started process has printed so far (stdout and stderr). */
  output(child: ChildProcess): string;
  /** A process of that kind still running (the first started), to kill it. */
  running(kind: 'worker' | 'controller'): ChildProcess | undefined;
  /** SIGKILLs every process it started. */
  stop(): void;
}

/** `kubeconfig`: an API server of the file's own (startOwnKube) instead of the shared test one. */
export function shim(opts: { namespace: string; taskQueue: string; kubeconfig?: string }): Shim {
  const children: { label: string; child: ChildProcess; output: string[] }[] = [];
  // A Worker Deployment of its own: the first worker makes its version current, whatever build the stack saw before.
  const deployment = `mf-shim-${randomBytes(4).toString('hex')}`;
  const alive = (c: ChildProcess): boolean => c.exitCode === null && c.signalCode === null;
  const run = (label: 'worker' | 'controller', env: Record<string, string>, args: string[] = []): ChildProcess => {
    const child = spawn(process.execPath, [...processArgs(label), ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, TEMPORAL_ADDRESS, METALFLOW_TASK_QUEUE: opts.taskQueue, METALFLOW_KUBECONFIG: opts.kubeconfig ?? KUBECONFIG, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output: string[] = [];
    const echo = (d: Buffer) => process.stderr.write(`[${label} ${child.pid}] ${d.toString()}`);
    child.stderr?.on('data', (d: Buffer) => {
      output.push(d.toString());
      echo(d);
    });
    child.stdout?.on('data', (d: Buffer) => {
      output.push(d.toString());
      if (label === 'controller') echo(d);
    });
    children.push({ label, child, output });
    return child;
  };
  return {
    startWorker: (env = {}, args = []) =>
      run('worker', {
        IRONIC_URL,
        METALFLOW_WORKFLOW_BUNDLE: WORKFLOW_BUNDLE_PATH,
        METALFLOW_SECRET_KEY: randomBytes(32).toString('base64'),
        METALFLOW_WORKER_DEPLOYMENT: deployment,
        ...TEST_FETCH_ENV,
        ...env,
      }, args),
    startController: (env = {}) =>
      run('controller', {
        // The test stack's Ironic, read only for the node health conditions (k8s/controller/node-health.ts).
        IRONIC_URL,
        METALFLOW_WATCH_NAMESPACE: opts.namespace,
        METALFLOW_LEASE_NAMESPACE: opts.namespace,
        // Metal3's operator's Lease looked for in the file's own namespace: the takeover tests hold one for a while,
        // and a controller reading every namespace would refuse the hosts of the files running beside them.
        METALFLOW_BMO_LEASE_NAMESPACE: opts.namespace,
        METALFLOW_LEASE_SECONDS: '4',
        ...env,
      }),
    output: (child) => children.find((c) => c.child === child)?.output.join('') ?? '',
    running: (kind) => children.find((c) => c.label === kind && alive(c.child))?.child,
    stop: () => {
      // A profiled process (METALFLOW_TEST_CPU_PROF_DIR, test/support/process-bundles.ts) writes its profile as it exits.
      for (const { child } of children) if (alive(child)) child.kill(process.env.METALFLOW_TEST_CPU_PROF_DIR ? 'SIGTERM' : 'SIGKILL');
    },
  };
}

/** The CRDs installed and established, and a fresh namespace for this file's hosts. */
export function prepareNamespace(ns: string, kubeconfig?: string): void {
  kubectl(['apply', '-f', join(REPO_ROOT, 'k8s', 'crds')], { kubeconfig });
  kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/baremetalhosts.metal3.io', 'crd/hardwaredata.metal3.io'], { kubeconfig });
  kubectl(['create', 'namespace', ns], { kubeconfig });
}

/** Removes what a test namespace left: hosts (finalizers dropped, nothing else removes them once the controller is gone). */
export function cleanNamespace(ns: string, kubeconfig?: string): void {
  kubectl(['delete', 'bmh', '--all', '-n', ns, '--wait=false'], { check: false, kubeconfig });
  for (const name of kubectl(['get', 'bmh', '-n', ns, '-o', 'name'], { check: false, kubeconfig }).stdout.split('\n').filter(Boolean)) {
    kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}'], { check: false, kubeconfig });
  }
}

export interface ShimSuite {
  /** A Temporal client on the test stack. */
  readonly client: Client;
  readonly shim: Shim;
}

/**
 * A test file's whole setting, as hooks: the shared API server with the CRDs,
 * a fresh namespace, a worker and a controller on `taskQueue`; afterwards the
 * processes stopped, the namespace's hosts cleared and the API server released.
 */
export function useShimSuite(
  namespace: string,
  taskQueue: string,
  /** The controller's settings; a function is read once the file's own beforeAll hooks have run. */
  controllerEnv: Record<string, string> | (() => Record<string, string>) = {},
  /** The worker's settings, read once the file's own beforeAll hooks (registered first) have run. */
  workerEnv: () => Record<string, string> = () => ({}),
  /** An API server of the file's own (its kubeconfig, read once the file's own beforeAll hooks have run) instead of the shared one. */
  ownKubeconfig?: () => string,
): ShimSuite {
  let kube: KubeLease | undefined;
  let env: TestWorkflowEnvironment | undefined;
  let processes: Shim | undefined;
  let kubeconfig: string | undefined;
  beforeAll(async () => {
    kubeconfig = ownKubeconfig?.();
    if (!kubeconfig) kube = useKube();
    prepareNamespace(namespace, kubeconfig);
    env = await TestWorkflowEnvironment.createFromExistingServer({ address: TEMPORAL_ADDRESS });
    processes = shim({ namespace, taskQueue, kubeconfig });
    processes.startWorker(workerEnv());
    processes.startController(typeof controllerEnv === 'function' ? controllerEnv() : controllerEnv);
  }, KUBE_BUILD_TIMEOUT_MS);
  afterAll(async () => {
    processes?.stop();
    if (kube) cleanNamespace(namespace);
    // An API server of the file's own is stopped by the file, namespace and all.
    await env?.teardown();
    kube?.release();
  });
  return {
    get client() {
      if (!env) throw new Error('the shim suite is not set up yet');
      return env.client;
    },
    get shim() {
      if (!processes) throw new Error('the shim suite is not set up yet');
      return processes;
    },
  };
}
