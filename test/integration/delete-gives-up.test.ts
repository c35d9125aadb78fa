/**
 * Deletes that cannot clean up the host still finish (issue 16 item 3), as in
 * Metal3: after more than DELETE_RETRY_LIMIT failures a delete skips
 * deprovisioning for the power off, and the power off for deleting the node.
 * Ironic (through the fault proxy) refuses the host's deprovisioning or power
 * requests for good; the real Ironic node must be gone at the end.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import { hostWorkflowId } from '../../model/host-ref';
import { DELETE_RETRY_LIMIT } from '../../workflows/host/decide';
import { hostViewQuery, type HostView } from '../../contracts/host';
import type { hostWorkflow } from '../../workflows/host/host';
import { IRONIC_URL } from '../support/env';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { IronicProxy } from '../../bench/support/ironic-proxy';

const NS = 'delete-gives-up';
const proxy = new IronicProxy(IRONIC_URL);
const ironic = new IronicClient({ url: IRONIC_URL });
let h: Harness;

beforeAll(async () => {
  await proxy.start();
  h = await startHarness({ hostOptions: FAST_HOST_OPTIONS, ironicUrl: proxy.url });
}, 60_000);

afterAll(async () => {
  await h?.close();
  await proxy.stop();
});

const IMAGE = { url: 'http://127.0.0.1/images/gives-up.qcow2', checksum: 'c'.repeat(64), checksumType: 'sha256' as const };

/** A fake-hardware host brought to `state`; its workflow handle and Ironic node id. */
async function hostIn(state: 'available' | 'provisioned') {
  const ref = { namespace: NS, name: uniq('h') };
  const handle = h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref));
  await h.hosts.put(ref, {
    spec: {
      bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` },
      bootMACAddress: randomMac(),
      online: true,
      ...(state === 'provisioned' ? { image: IMAGE } : {}),
    },
    credentials: { username: 'admin', password: 'pw' },
  });
  const view = await waitFor(state, async () => {
    const v = await handle.query(hostViewQuery);
    return v.status.provisioning.state === state && !v.currentOperation ? v : undefined;
  }, { timeoutMs: 120_000 });
  return { ref, handle, nodeId: view.status.provisioning.ID };
}

const outcomes = (v: HostView, from: number) => v.operations.slice(from).map((o) => `${o.kind}:${o.outcome}`);

describe('a delete that cannot clean up the host', () => {
  it('skips the power off after the retry count and deletes the node', { timeout: 300_000 }, async () => {
    const { ref, handle, nodeId } = await hostIn('available');
    const before = (await handle.query(hostViewQuery)).operations.length;
    proxy.fail((r) => r.method === 'PUT' && r.path.split('?')[0] === `/v1/nodes/${nodeId}/states/power`, 1000, 400, 'the BMC does not answer (test)');
    await h.hosts.remove(ref);
    const final = await handle.result();
    const failed = Array<string>(DELETE_RETRY_LIMIT + 1).fill('power:failed');
    expect(outcomes(final, before)).toEqual([...failed, 'delete:succeeded']);
    expect(await ironic.getNode(nodeId)).toBeUndefined();
  });

  it('skips deprovisioning after the retry count, then powers off and deletes', { timeout: 300_000 }, async () => {
    const { ref, handle, nodeId } = await hostIn('provisioned');
    const before = (await handle.query(hostViewQuery)).operations.length;
    proxy.fail(
      (r) => r.method === 'PUT' && r.path.split('?')[0] === `/v1/nodes/${nodeId}/states/provision` && /"deleted"/.test(r.body),
      1000,
      400,
      'cleaning is broken (test)',
    );
    await h.hosts.remove(ref);
    const final = await handle.result();
    const failed = Array<string>(DELETE_RETRY_LIMIT + 1).fill('deprovision:failed');
    expect(outcomes(final, before)).toEqual([...failed, 'power:succeeded', 'delete:succeeded']);
    expect(await ironic.getNode(nodeId)).toBeUndefined();
  });
});
