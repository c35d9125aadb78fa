/**
 * The run's workflow bundles for files that need the code itself (an in-process worker, a replay): the global setup
 * builds both once (test/support/global-setup.ts) and writes them to the test state dir; a bundle costs some 9 CPU-s.
 * The traced one is built while the first files run, so a file may wait for it.
 * A stack-free run (METALFLOW_TEST_NO_STACK=1) has no global setup, so it builds its own, once per process: a file left
 * in the state dir by an earlier run may be of other code.
 */
import { existsSync, readFileSync } from 'node:fs';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { TRACED_WORKFLOW_BUNDLE_OPTIONS, WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import { TRACED_WORKFLOW_BUNDLE_PATH, WORKFLOW_BUNDLE_PATH } from './env';

const built = new Map<string, Promise<string>>();

/** The traced bundle is written while the first files run (the plain one before any): waited for, up to 3 minutes. */
async function appeared(path: string): Promise<void> {
  const deadline = Date.now() + 180_000;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`${path}: not written by the run's global setup within 3 minutes (its log says why)`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function runBundle(path: string, options: typeof WORKFLOW_BUNDLE_OPTIONS): Promise<string> {
  let code = built.get(path);
  if (!code) {
    code =
      process.env.METALFLOW_TEST_NO_STACK === '1'
        ? bundleWorkflowCode({ ...options, logger: new DefaultLogger('WARN') }).then((b) => b.code)
        : appeared(path).then(() => readFileSync(path, 'utf8'));
    built.set(path, code);
  }
  return code;
}

/** The worker's workflow bundle (WORKFLOW_BUNDLE_OPTIONS). */
export const runWorkflowBundle = (): Promise<string> => runBundle(WORKFLOW_BUNDLE_PATH, WORKFLOW_BUNDLE_OPTIONS);
/** A traced worker's (TRACED_WORKFLOW_BUNDLE_OPTIONS). */
export const runTracedWorkflowBundle = (): Promise<string> => runBundle(TRACED_WORKFLOW_BUNDLE_PATH, TRACED_WORKFLOW_BUNDLE_OPTIONS);
