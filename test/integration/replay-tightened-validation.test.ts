/**
 * A host's recorded history must keep replaying after the validation rules
 * are tightened. Temporal runs an update's validator only when the update
 * arrives, never on replay, while the handler runs on every replay: a handler
 * that validated again would meet the new rule on the next replay of an old
 * host (a worker restart, a cache eviction) and fail its workflow task for
 * ever. Here the real workflow bundle is built with model/validate.ts swapped
 * for a version whose validateHostSpec refuses every spec
 * (test/support/tightened-validate.ts); a live worker on that bundle shows
 * the swap reached the workflow's update validator, and every baseline host
 * history that took a spec (test/fixtures/baseline) replays on it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { REPO_ROOT } from '../../config/env';
import { hostWorkflowId } from '../../model/host-ref';
import { applySpecUpdate } from '../../contracts/host';
import { startHarness, uniq, randomMac, type Harness } from '../support/harness';
import { bundleWithTightenedValidation } from '../support/tightened-bundle';
import { TIGHTENED_REASON } from '../support/tightened-validate';

const DIR = join(REPO_ROOT, 'test', 'fixtures', 'baseline');
/** Host histories in which the host took a spec (applySpec or setImage): their handlers run on replay. */
const withSpecs = readdirSync(DIR).filter((f) => {
  if (!f.startsWith('host-') || !f.endsWith('.json')) return false;
  const text = readFileSync(join(DIR, f), 'utf8');
  return /"name":\s*"(applySpec|setImage)"/.test(text);
});

let code: string;
let h: Harness;

beforeAll(async () => {
  code = await bundleWithTightenedValidation();
  h = await startHarness({ workflowCode: code });
}, 300_000);
afterAll(async () => {
  await h?.close();
});

describe('replay under a tightened validation rule', () => {
  it('the tightened bundle refuses a spec the current rules accept', async () => {
    const ref = { namespace: 'replay', name: uniq('tightened') };
    const handle = await h.client.workflow.start('hostWorkflow', {
      workflowId: hostWorkflowId(ref),
      taskQueue: h.taskQueue,
      args: [{ ref }],
    });
    try {
      const spec = { bmc: { address: 'fake://tightened', credentialsName: 'tightened-bmc' }, bootMACAddress: randomMac(), online: true };
      const err = await handle.executeUpdate(applySpecUpdate, { args: [spec] }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      expect(String((err as WorkflowUpdateFailedError).cause?.message)).toContain(TIGHTENED_REASON);
    } finally {
      await handle.terminate('test over');
    }
  });

  it('covers the baseline host histories that took a spec', () => {
    expect(withSpecs).toEqual(expect.arrayContaining(['host-lifecycle.json', 'host-direct.json', 'host-service.json', 'host-failure-run1.json']));
  });

  it.each(withSpecs)('%s replays', async (file) => {
    const history: unknown = JSON.parse(readFileSync(join(DIR, file), 'utf8'));
    await expect(Worker.runReplayHistory({ workflowBundle: { code }, replayName: file }, history)).resolves.toBeUndefined();
  });
});
