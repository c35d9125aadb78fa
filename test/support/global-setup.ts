/**
 * Starts the real test stack (Temporal dev server, Ironic, sushy-tools) once
 * for the whole run and bundles the workflows once; stops the stack after,
 * unless METALFLOW_KEEP_TEST_STACK=1 (handy while iterating).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { REPO_ROOT } from '../../config/env';
import { TRACED_WORKFLOW_BUNDLE_OPTIONS, WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import { holdKubeForRun } from '../k8s/kube-harness';
import { TEST_ENV, TEST_STATE_DIR, TRACED_WORKFLOW_BUNDLE_PATH, WORKFLOW_BUNDLE_PATH } from './env';

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

export default async function setup(): Promise<() => void> {
  // Pure unit tests can run without the stack: METALFLOW_TEST_NO_STACK=1 npx vitest run test/unit
  if (process.env.METALFLOW_TEST_NO_STACK === '1') return () => undefined;
  mkdirSync(TEST_STATE_DIR, { recursive: true });
  // An Ironic left stopped by an earlier run starts empty, as CI's does: the nodes of earlier runs would cost
  // every file's node reads and Ironic's periodic work (a stack kept running with METALFLOW_KEEP_TEST_STACK stays as it is).
  const started = stackInBackground('start', '--empty-db');
  // Settled now, so a failed start is not an unhandled rejection while the bundle builds.
  const startError = started.then(() => undefined, (err: unknown) => err);
  const { code } = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
  // The traced worker's bundle (test/integration/tracing.test.ts) too, while the stack still starts.
  const { code: traced } = await bundleWorkflowCode({ ...TRACED_WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
  const err = await startError;
  if (err) throw err;
  // Renamed into place: a worker of another run in this checkout may be reading the bundle right now.
  for (const [path, text] of [[WORKFLOW_BUNDLE_PATH, code], [TRACED_WORKFLOW_BUNDLE_PATH, traced]] as const) {
    writeFileSync(`${path}.${process.pid}`, text);
    renameSync(`${path}.${process.pid}`, path);
  }
  const kube = holdKubeForRun();
  return () => {
    kube.release();
    if (process.env.METALFLOW_KEEP_TEST_STACK !== '1') stack('stop');
  };
}
