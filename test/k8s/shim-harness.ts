/**
 * The shim's processes for a k8s test file: a worker in Kubernetes mode and
 * the controller, each its own process (the tests block their own event loop
 * in kubectl calls), on the test stack's Temporal and Ironic, driving one
 * namespace of the shared test API server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { REPO_ROOT } from '../../config/env';
import { IRONIC_URL, TEMPORAL_ADDRESS, WORKFLOW_BUNDLE_PATH } from '../support/env';
import { KUBECONFIG, kubectl } from './kube-harness';

export interface Shim {
  startWorker(): ChildProcess;
  startController(): ChildProcess;
  /** SIGKILLs every process it started. */
  stop(): void;
}

export function shim(opts: { namespace: string; taskQueue: string }): Shim {
  const children: ChildProcess[] = [];
  const run = (label: string, script: string, env: Record<string, string>): ChildProcess => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, script)], {
      cwd: REPO_ROOT,
      env: { ...process.env, TEMPORAL_ADDRESS, METALFLOW_TASK_QUEUE: opts.taskQueue, METALFLOW_KUBECONFIG: KUBECONFIG, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const echo = (d: Buffer) => process.stderr.write(`[${label} ${child.pid}] ${d.toString()}`);
    child.stderr?.on('data', echo);
    if (label === 'controller') child.stdout?.on('data', echo);
    children.push(child);
    return child;
  };
  return {
    startWorker: () =>
      run('worker', join('workers', 'main.ts'), {
        IRONIC_URL,
        METALFLOW_WORKFLOW_BUNDLE: WORKFLOW_BUNDLE_PATH,
        METALFLOW_SECRET_KEY: randomBytes(32).toString('base64'),
      }),
    startController: () =>
      run('controller', join('k8s', 'controller', 'main.ts'), {
        METALFLOW_WATCH_NAMESPACE: opts.namespace,
        METALFLOW_LEASE_NAMESPACE: opts.namespace,
        METALFLOW_LEASE_SECONDS: '4',
      }),
    stop: () => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    },
  };
}

/** Removes what a test namespace left: hosts (finalizers dropped, nothing else removes them once the controller is gone). */
export function cleanNamespace(ns: string): void {
  kubectl(['delete', 'bmh', '--all', '-n', ns, '--wait=false'], { check: false });
  for (const name of kubectl(['get', 'bmh', '-n', ns, '-o', 'name'], { check: false }).stdout.split('\n').filter(Boolean)) {
    kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}'], { check: false });
  }
}
