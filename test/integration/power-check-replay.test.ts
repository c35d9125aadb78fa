/**
 * A power check's timer and an update in one workflow task. The 1,000-host
 * benchmark found a host whose check ran its local activity before an update
 * that came in the same task; replayed later (the worker's cache had evicted
 * it), the update was handed to the workflow together with the timer, the
 * workflow took itself for "woken by the update", skipped the check, and
 * failed with a nondeterminism error. The check is now decided by the idle
 * timer's fire (workflows/host/idle-wait.ts), so it runs whatever the order. Here the update reaches the server while no
 * worker runs, after the timer fired, so the next worker gets both at once;
 * the check must run in that task and the history must replay. Real Temporal
 * and Ironic.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { createWorker } from '../../workers/worker';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, setImageUpdate } from '../../contracts/host';
import { WORKFLOW_BUNDLE_PATH } from '../support/env';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';

const POWER_CHECK_SECONDS = 2;
let h: Harness;
let worker: { stop(): Promise<void> } | undefined;
let firstUsed = false;

/** The harness's worker first (it holds the task queue's registration), a fresh one after it stopped. */
async function startWorker(): Promise<{ stop(): Promise<void> }> {
  const w = firstUsed
    ? await createWorker(
        { connection: h.nativeConnection, namespace: 'default', taskQueue: h.taskQueue, ironic: h.ironic, secrets: h.secrets },
        { workflowBundle: { codePath: WORKFLOW_BUNDLE_PATH }, workflowsPath: undefined },
      )
    : h.worker;
  firstUsed = true;
  const running = w.run();
  return {
    async stop() {
      w.shutdown();
      await running;
    },
  };
}

beforeAll(async () => {
  h = await startHarness({ startWorker: false, hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: POWER_CHECK_SECONDS } });
  worker = await startWorker();
});
afterAll(async () => {
  await worker?.stop();
  await h?.close();
});

/** Whether the server holds the update (admitted, not yet accepted: no worker runs). */
async function updateAdmitted(workflowId: string, updateId: string): Promise<boolean> {
  try {
    await h.client.workflowService.pollWorkflowExecutionUpdate({
      namespace: 'default',
      updateRef: { workflowExecution: { workflowId }, updateId },
      waitPolicy: { lifecycleStage: temporal.api.enums.v1.UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ADMITTED },
    });
    return true;
  } catch (err) {
    // gRPC NOT_FOUND (5): the server does not hold it yet.
    if ((err as { code?: number }).code === 5) return false;
    throw err;
  }
}

/** Each event named by its attributes field, e.g. timerFiredEventAttributes → timerFired. */
const kindOf = (e: object): string => {
  const key = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k]);
  return key ? key.replace(/EventAttributes$/, '') : '?';
};

describe('a power check and an update in the same workflow task', () => {
  it('runs the check in the task that carries the update, and the history replays without nondeterminism', { timeout: 240_000 }, async () => {
    const ref = { namespace: 'pcr', name: uniq('pcr') };
    const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
    await h.hosts.put(ref, {
      spec: { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true },
      credentials: { username: 'admin', password: 'pw' },
    });
    await waitFor('available and idle', async () => {
      const v = await handle.query(hostViewQuery);
      return v.status.provisioning.state === 'available' && !v.currentOperation;
    }, { timeoutMs: 120_000 });

    // No worker: the idle wait's timer fires, and the update waits in the server with it.
    // A fire no worker has taken: no completed task after the last timerFired. (Counting fires after the
    // stop raced a stop that took longer than the period under load: the fire came before the count.)
    const fireWaiting = async () => {
      const kinds = ((await handle.fetchHistory()).events ?? []).map(kindOf);
      const fired = kinds.lastIndexOf('timerFired');
      return fired >= 0 && !kinds.slice(fired).includes('workflowTaskCompleted');
    };
    await worker!.stop();
    worker = undefined;
    await waitFor('the idle timer to fire with no worker', fireWaiting, { timeoutMs: 30_000 });
    const image = { url: 'http://127.0.0.1/images/pcr.qcow2', checksum: 'c'.repeat(64), format: 'qcow2' as const };
    const updateId = uniq('pcr-image');
    const update = handle.executeUpdate(setImageUpdate, { args: [image], updateId });
    // The update must be in the server, beside the fired timer, before a worker polls: the server
    // answers a poll for the ADMITTED stage once it holds the update (NotFound before).
    await waitFor('the update admitted by the server', () => updateAdmitted(handle.workflowId, updateId), { timeoutMs: 30_000, intervalMs: 100 });
    worker = await startWorker();
    await update;
    await waitFor('provisioned', async () => {
      const v = await handle.query(hostViewQuery);
      return v.status.provisioning.state === 'provisioned' && !v.currentOperation;
    }, { timeoutMs: 120_000 });

    const history = await handle.fetchHistory();
    const kinds = (history.events ?? []).map(kindOf);
    // The image update came out of the task the timer scheduled, and the check ran in that task too.
    const accepted = kinds.lastIndexOf('workflowExecutionUpdateAccepted');
    const task = kinds.lastIndexOf('workflowTaskCompleted', accepted);
    expect(kinds.slice(kinds.lastIndexOf('workflowTaskScheduled', task) - 1, task + 1)).toEqual([
      'timerFired',
      'workflowTaskScheduled',
      'workflowTaskStarted',
      'workflowTaskCompleted',
    ]);
    expect(kinds.slice(task + 1, kinds.indexOf('workflowTaskScheduled', task))).toContain('markerRecorded');

    await expect(Worker.runReplayHistory({ workflowBundle: { codePath: WORKFLOW_BUNDLE_PATH }, replayName: ref.name }, history)).resolves.toBeUndefined();
  });
});
