/**
 * A Kubernetes-mode host on a worker with no API server configured: the
 * worker cannot write its status (it says so in its log), and the host goes
 * on, hands over to fresh runs and obeys a delete. Status writes go through
 * the worker's writer, not activities: none of them is in the host's history.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery } from '../../contracts/host';
import type { hostWorkflow } from '../../workflows/host/host';
import { readoptHost } from '../../control/host-run';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { largeInventory, runHistorySizes, statusWithInventory } from '../support/large-inventory';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ hostOptions: { ...FAST_HOST_OPTIONS, publishStatus: true, maxHistoryEvents: 20 } });
});
afterAll(async () => {
  await h?.close();
});

describe('status publishing on a worker without Kubernetes', () => {
  it('writes nothing to history and leaves the host free to hand over and be deleted', async () => {
    const ref = { namespace: 'no-kube', name: uniq('host') };
    const handle = h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref));
    await h.hosts.put(ref, {
      spec: { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true },
      credentials: { username: 'admin', password: 'x' },
    });
    const firstRun = (await handle.describe()).runId;
    await waitFor('available, idle and handed over to a new run', async () => {
      const v = await handle.query(hostViewQuery);
      if (v.status.provisioning.state !== 'available' || v.currentOperation) return undefined;
      return (await handle.describe()).runId !== firstRun ? true : undefined;
    }, { timeoutMs: 120_000 });
    const events = (await h.client.workflow.getHandle(hostWorkflowId(ref), firstRun).fetchHistory()).events ?? [];
    // The run wrote its status (registering, inspecting, available) through the worker, with no activity.
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'publishHostStatus')).toEqual([]);
    await h.hosts.remove(ref);
    const final = await handle.result();
    expect(final.operations.at(-1)).toMatchObject({ kind: 'delete', outcome: 'succeeded' });
  });

  /**
   * No write ever arrives here, so each one carries the whole status, a large inventory
   * included. Written by activities, each write's input was history: the run grew by the
   * inventory's size per failure and handed over by bytes. Through the worker's writer the
   * inventory is in history once, in the run's input, however many failures write the status.
   */
  it('keeps a large inventory out of history through an error loop: every run under 2 MB', async () => {
    const ref = { namespace: 'no-kube', name: uniq('large') };
    const id = hostWorkflowId(ref);
    const options = { ...FAST_HOST_OPTIONS, publishStatus: true };
    await readoptHost(h.client, {
      ref,
      taskQueue: h.taskQueue,
      options,
      status: statusWithInventory(largeInventory(300)),
      // No credentials Secret: every registration fails and is retried after the backoff.
      spec: { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true },
    });
    const handle = h.client.workflow.getHandle<typeof hostWorkflow>(id);
    const failures = 15;
    await waitFor(`${failures} failed registrations`, async () => ((await handle.query(hostViewQuery)).status.errorCount >= failures ? true : undefined), { timeoutMs: 240_000 });
    const runs = await runHistorySizes(h.client, id);
    console.log(`history of ${id}: ${runs.map((r) => `${r.runId.slice(0, 8)} ${r.events} events, ${(r.bytes / 1024).toFixed(0)} KiB`).join('; ')}`);
    const inventoryBytes = JSON.stringify(largeInventory(300)).length;
    expect(runs.length).toBeGreaterThan(0);
    for (const r of runs) expect(r.bytes).toBeLessThan(2 * 1024 * 1024);
    // Fifteen failures wrote the status: the inventory counts once (the input), not once per write.
    for (const r of runs) expect(r.bytes).toBeLessThan(2 * inventoryBytes);
    await handle.terminate('test done');
  });
});
