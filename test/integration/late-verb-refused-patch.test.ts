/**
 * A verb Ironic takes after the worker gave up on its answer, then carries out
 * while the worker decides to send it again: at 100 Redfish hosts an
 * `inspect` was answered 45 s late (the client waits 30 s), the re-read still
 * found the node `manageable`, and the PATCH of the second send's sent marker
 * met the node `inspecting` and was refused (409 "Cannot update node … while it
 * is in state inspecting"). The node was `manageable` again at the read that
 * judged the refusal, so "nothing moved" by its state, and the inspection
 * failed as the host's error although Ironic had done it. Here the fault proxy
 * reproduces that order on the real Ironic: the inspect reaches Ironic only
 * when the second PATCH arrives, that PATCH is answered with Ironic's own
 * refusal, and the read after it waits until the inspection is over.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostView } from '../../contracts/host';
import { IRONIC_URL } from '../support/env';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { IronicProxy, reachedPeer, type RecordedRequest } from '../../bench/support/ironic-proxy';

let proxy: IronicProxy;
let h: Harness;

beforeAll(async () => {
  proxy = new IronicProxy(IRONIC_URL);
  await proxy.start();
  h = await startHarness({ ironicUrl: proxy.url, ironicRequestTimeoutMs: 4000, hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 0 } });
}, 120_000);
afterAll(async () => {
  await h?.close();
  await proxy?.stop();
});

const isInspect = (r: RecordedRequest): boolean => r.method === 'PUT' && r.path.endsWith('/states/provision') && r.body.includes('"inspect"');

describe('an inspect Ironic carried out late, and the second send refused meanwhile', () => {
  it('is found done, not failed, and never sent twice', { timeout: 300_000 }, async () => {
    const ref = { namespace: 'late-verb', name: uniq('host') };
    let heldNode: string | undefined;
    let secondPatch: () => void = () => undefined;
    const patchSeen = new Promise<void>((resolve) => (secondPatch = resolve));
    let refused = false;
    proxy.interceptor = (r) => {
      if (!heldNode && isInspect(r)) {
        heldNode = r.path.split('/')[3];
        // No answer within the client's 4 s; Ironic gets the verb once the worker is sending it again.
        return { kind: 'no-answer', ms: 6000, forward: true, forwardWhen: patchSeen };
      }
      if (heldNode && !refused && r.method === 'PATCH' && r.path === `/v1/nodes/${heldNode}`) {
        refused = true;
        secondPatch();
        // The read after the refusal comes once the inspection Ironic now runs is over (fake-hardware: well under 2.5 s).
        proxy.hold((g) => g.method === 'GET' && g.path.startsWith(`/v1/nodes/${heldNode}`) && g.at > r.at && g.at < r.at + 5000, 2500);
        return { kind: 'answer', status: 409, faultstring: `Cannot update node "${heldNode}" while it is in state "inspecting".` };
      }
      return undefined;
    };
    await h.hosts.put(ref, {
      spec: { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: false },
      credentials: { username: 'admin', password: 'pw' },
    });
    const ready = await waitFor('available and idle', async () => {
      const v = (await h.hosts.get(ref)) as HostView;
      return v.status.provisioning.state === 'available' && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 120_000, intervalMs: 500 });
    proxy.interceptor = undefined;
    expect(refused).toBe(true); // the order above did happen
    expect(ready.operations.filter((o) => o.kind === 'inspect').map((o) => o.outcome)).toEqual(['succeeded']);
    expect(ready.status.errorCount).toBe(0);
    expect(proxy.requests.filter((r) => isInspect(r) && reachedPeer(r))).toHaveLength(1);
    await h.hosts.remove(ref);
    await waitFor('the node deleted', async () => (await h.ironic.getNode(ready.status.provisioning.ID)) === undefined, { timeoutMs: 120_000 });
  });
});
