/**
 * A host that waits long for a provisioning permit while updates arrive
 * (docs/kubernetes.md, *Provisioning limit*), on a worker
 * with a limit of 1 whose Ironic is reached through the fault proxy: one host
 * holds the permit in `provisioning` (its deploys refused as "node locked"
 * until `unblock()`), the other is given an image, waits `delayed`, and
 * receives `updates` spec changes that do not change what it waits for (its
 * description). Used by test/integration/provisioning-limit-continue.test.ts.
 */
import type { HostRef, Image } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import { isDeploy, type IronicProxy } from '../../bench/support/ironic-proxy';
import { waitFor, type Harness } from './harness';
import { availableFakeHost } from './history-fixture';

export const PERMIT_WAIT_IMAGE: Image = { url: 'http://127.0.0.1/images/permit.qcow2', checksum: 'c'.repeat(64), checksumType: 'sha256', format: 'qcow2' };

export interface PermitWait {
  holder: HostRef;
  waiter: HostRef;
  /** The waiter's run when it began to wait, and since when it waits. */
  firstRun: string;
  delayedSince: string;
  view(ref: HostRef): Promise<HostView>;
  /** Lets the holder's deploy through. */
  unblock(): void;
}

export async function hostWaitingThroughUpdates(h: Harness, proxy: IronicProxy, prefix: string, updates: number): Promise<PermitWait> {
  const [holder, waiter] = ['holder', 'waiter'].map((role) => ({ namespace: 'permit', name: `${prefix}-${role}` })) as [HostRef, HostRef];
  const view = (ref: HostRef): Promise<HostView> => h.client.workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery);
  await Promise.all([availableFakeHost(h, holder, `${prefix}-holder`), availableFakeHost(h, waiter, `${prefix}-waiter`)]);

  let blocked = true;
  proxy.interceptor = (r) =>
    blocked && isDeploy(r) ? { kind: 'answer', status: 409, faultstring: 'Node is locked by host metalflow-test-proxy, please retry after the current operation is completed.' } : undefined;
  await h.hosts.setImage(holder, PERMIT_WAIT_IMAGE);
  await waitFor('the holder provisioning', async () => (await view(holder)).currentOperation?.kind === 'provision', { timeoutMs: 90_000 });
  await h.hosts.setImage(waiter, PERMIT_WAIT_IMAGE);
  const waiting = await waitFor('the waiter delayed', async () => {
    const v = await view(waiter);
    return v.status.operationalStatus === 'delayed' && v.delayed?.state === 'provisioning' ? v : undefined;
  });
  const firstRun = (await h.client.workflow.getHandle(hostWorkflowId(waiter)).describe()).runId;
  for (let i = 1; i <= updates; i++) {
    const { spec } = await view(waiter);
    await h.hosts.put(waiter, { spec: { ...spec!, description: `update ${i} while waiting for a permit` } });
  }
  return {
    holder,
    waiter,
    firstRun,
    delayedSince: waiting.delayed!.since,
    view,
    unblock: () => {
      blocked = false;
    },
  };
}
