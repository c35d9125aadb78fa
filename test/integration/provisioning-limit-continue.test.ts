/**
 * A host waiting long for a provisioning permit while updates arrive
 * (docs/kubernetes.md, *Provisioning limit*), on the real Temporal
 * and Ironic with a limit of 1: the waiting host's history is bounded (it
 * continues as new while it waits, its host history threshold set low), it
 * keeps its place in the limiter's queue and the time it began to wait, and
 * it gets the permit and provisions when the holder's deploy ends.
 */
import { describe, expect, it } from 'vitest';
import { hostWorkflowId } from '../../model/host-ref';
import { limiterViewQuery, limiterWorkflowId } from '../../contracts/limiter';
import { FAST_HOST_OPTIONS, waitFor } from '../support/harness';
import { useProxiedHarness } from '../support/proxied-harness';
import { hostWaitingThroughUpdates } from '../support/permit-wait';

const MAX_HISTORY_EVENTS = 40;
const UPDATES = 25;
const suite = useProxiedHarness({ provisioningLimit: 1, provisioningLimitCheckSeconds: 2, hostOptions: { ...FAST_HOST_OPTIONS, maxHistoryEvents: MAX_HISTORY_EVENTS } });

describe('provisioning limit: a long wait', () => {
  it('continues as new while waiting through many updates, keeping its place, its delayedSince and the grant', async () => {
    const { h, proxy } = suite;
    const w = await hostWaitingThroughUpdates(h, proxy, `cont-${Date.now()}`, UPDATES);
    const handle = h.client.workflow.getHandle(hostWorkflowId(w.waiter));

    // Still waiting, in a later run whose history stays short, with the same delayedSince.
    const run = await waitFor('the waiter in a later run, delayed', async () => {
      const d = await handle.describe();
      const v = await w.view(w.waiter);
      return d.runId !== w.firstRun && v.spec?.description === `update ${UPDATES} while waiting for a permit` && v.status.operationalStatus === 'delayed' ? { d, v } : undefined;
    }).catch(async (err) => {
      const d = await handle.describe();
      console.log('permit continue diagnostics: run', d.runId, 'first', w.firstRun, 'history length', d.historyLength);
      throw err;
    });
    expect(run.v.delayed).toEqual({ state: 'provisioning', since: w.delayedSince });
    expect(run.d.historyLength).toBeLessThan(MAX_HISTORY_EVENTS * 3);
    // Its place: the limiter holds the holder, and the waiter's request (the same one) in the queue, now naming its current run.
    const limiter = await h.client.workflow.getHandle(limiterWorkflowId(h.taskQueue)).query(limiterViewQuery);
    expect(limiter.holders.map((x) => x.workflowId)).toEqual([hostWorkflowId(w.holder)]);
    expect(limiter.queue.map((r) => r.workflowId)).toEqual([hostWorkflowId(w.waiter)]);
    expect(limiter.queue[0]!.runId).not.toBe(w.firstRun);
    expect(limiter.queue[0]!.requestId.startsWith(`${w.firstRun}/`)).toBe(true);

    // The holder's deploy goes through: the permit comes to the waiter's current run, which provisions.
    w.unblock();
    const done = await waitFor(
      'both provisioned',
      async () => {
        const vs = await Promise.all([w.view(w.holder), w.view(w.waiter)]);
        return vs.every((v) => v.status.provisioning.state === 'provisioned' && v.status.operationalStatus === 'OK' && !v.currentOperation) ? vs : undefined;
      },
      { timeoutMs: 180_000 },
    );
    const provision = done[1]!.operations.filter((r) => r.kind === 'provision');
    expect(provision.map((r) => [r.outcome, r.delayedSince])).toEqual([['succeeded', w.delayedSince]]);
    // The release is a signal the host sends as its operation ends, handled in the limiter's next task: awaited, not raced.
    const limiterView = () => h.client.workflow.getHandle(limiterWorkflowId(h.taskQueue)).query(limiterViewQuery);
    await waitFor('the permit given back', async () => {
      const v = await limiterView();
      return v.holders.length === 0 && v.queue.length === 0 ? v : undefined;
    }).catch(async (err) => {
      console.log('limiter at the end:', JSON.stringify(await limiterView()));
      throw err;
    });
  }, 300_000);
});
