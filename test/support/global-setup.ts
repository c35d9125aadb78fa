/**
 * Starts the real test stack (Temporal dev server, Ironic, sushy-tools) once
 * for the whole run and bundles the workflows once; stops the stack after,
 * unless METALFLOW_KEEP_TEST_STACK=1 (handy while iterating).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { REPO_ROOT } from '../../config/env';
import { TRACED_WORKFLOW_BUNDLE_OPTIONS, WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import { IronicClient } from '../../clients/ironic/client';
import { holdKubeForRun } from '../k8s/kube-harness';
import { buildProcessBundles } from './process-bundles';
import { IRONIC_URL, TEST_ENV, TEST_STATE_DIR, TRACED_WORKFLOW_BUNDLE_PATH, WORKFLOW_BUNDLE_PATH } from './env';

const stack = (...args: string[]): void => {
  execFileSync('bash', [join(REPO_ROOT, 'scripts', 'stack.sh'), ...args], {
    env: { ...process.env, ...TEST_ENV },
    stdio: 'inherit',
  });
};

/** The stack's start in the background: the workflow bundle is built meanwhile (both take tens of seconds). */
const stackInBackground = (...args: string[]): Promise<void> =>
  new Promise((resolve, reject) => {
    const child = spawn('bash', [join(REPO_ROOT, 'scripts', 'stack.sh'), ...args], { env: { ...process.env, ...TEST_ENV }, stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`scripts/stack.sh ${args.join(' ')} exited ${code ?? signal}`))));
  });

/**
 * What the files left in the shared Ironic (test/support/ironic-cleanup.ts removes the nodes it can tell are a
 * file's): each node left costs Ironic's power sync for the rest of the run, a Redfish one most.
 */
async function reportLeftNodes(): Promise<void> {
  try {
    const nodes = await new IronicClient({ url: IRONIC_URL }).listNodeStates(['driver', 'maintenance', 'extra']);
    const synced = nodes.filter((n) => !n.maintenance);
    const byDriver = new Map<string, number>();
    for (const n of synced) byDriver.set(n.driver, (byDriver.get(n.driver) ?? 0) + 1);
    const owners = synced.map((n) => String(n.extra.metalflow_host ?? '(no owner)')).slice(0, 12);
    console.log(
      `[teardown] Ironic nodes left out of maintenance by the files: ${synced.length} (${[...byDriver].map(([d, c]) => `${d} ${c}`).join(', ') || 'none'})` +
        (owners.length ? `; e.g. ${owners.join(', ')}` : ''),
    );
  } catch {
    // The stack may be down already: nothing to report.
  }
}

/** Renamed into place: a worker of another run in this checkout may be reading the bundle right now. */
function writeBundle(path: string, code: string): void {
  writeFileSync(`${path}.${process.pid}`, code);
  renameSync(`${path}.${process.pid}`, path);
}

export default async function setup(): Promise<() => void> {
  // Pure unit tests can run without the stack: METALFLOW_TEST_NO_STACK=1 npx vitest run test/unit
  if (process.env.METALFLOW_TEST_NO_STACK === '1') return () => undefined;
  mkdirSync(TEST_STATE_DIR, { recursive: true });
  // An Ironic left stopped by an earlier run starts empty, as CI's does: the nodes of earlier runs would cost
  // every file's node reads and Ironic's periodic work (a stack kept running with METALFLOW_KEEP_TEST_STACK stays as it is).
  const started = stackInBackground('start', '--empty-db');
  // Settled now, so a failed start is not an unhandled rejection while the bundle builds.
  const startError = started.then(() => undefined, (err: unknown) => err);
  const [{ code }] = await Promise.all([bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') }), buildProcessBundles()]);
  const err = await startError;
  if (err) throw err;
  writeBundle(WORKFLOW_BUNDLE_PATH, code);
  // The traced bundle (a replay and the tracing file run it, test/support/run-bundles.ts) is built while the first
  // files run: none of them needs it in its first minutes. The last run's is removed first, so none reads it.
  rmSync(TRACED_WORKFLOW_BUNDLE_PATH, { force: true });
  void bundleWorkflowCode({ ...TRACED_WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') }).then(
    ({ code: traced }) => writeBundle(TRACED_WORKFLOW_BUNDLE_PATH, traced),
    (e: unknown) => console.error(`[global setup] the traced workflow bundle failed to build: ${String(e)}`),
  );
  const kube = holdKubeForRun();
  return async () => {
    await reportLeftNodes();
    kube.release();
    if (process.env.METALFLOW_KEEP_TEST_STACK !== '1') stack('stop');
  };
}
