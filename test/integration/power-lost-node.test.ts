/**
 * A power operation that meets a node Ironic no longer has (its database was
 * emptied, or the node deleted behind metalflow's back): the host registers
 * again and then powers on, instead of counting "no node" as "powered off"
 * and starting the same power operation again at once, for ever (the chaos
 * suite found hosts with hundreds of power operations after Ironic lost its
 * database in the middle of one).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostView } from '../../contracts/host';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';

let h: Harness;

beforeAll(async () => {
  // No periodic power check: only the power operation can notice the lost node.
  h = await startHarness({ hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 0 } });
});
afterAll(async () => {
  await h?.close();
});

describe('a power operation on a node Ironic lost', () => {
  it('registers the host again and powers it on, with no loop of power operations', async () => {
    const ref = { namespace: 'power-lost', name: uniq('host') };
    const spec = { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: false };
    await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
    const idle = (what: string, ok: (v: HostView) => boolean) =>
      waitFor(what, async () => {
        const v = (await h.hosts.get(ref)) as HostView;
        return !v.currentOperation && ok(v) ? v : undefined;
      }, { timeoutMs: 120_000, intervalMs: 500 });
    const before = await idle('available and off', (v) => v.status.provisioning.state === 'available' && !v.status.poweredOn);
    const lost = before.status.provisioning.ID;
    await h.ironic.setMaintenance(lost, 'test: the node goes away');
    await h.ironic.deleteNode(lost);

    await h.hosts.put(ref, { spec: { ...spec, online: true } });
    const after = await idle('available and on, on a node of its own again', (v) => v.status.provisioning.state === 'available' && v.status.poweredOn);
    expect(after.status.provisioning.ID).not.toBe(lost);
    expect((await h.ironic.getNode(after.status.provisioning.ID))?.power_state).toBe('power on');
    // One power operation met the lost node, one powered the new one on.
    expect(after.operations.filter((o) => o.kind === 'power' && Date.parse(o.startedAt) > Date.parse(before.status.lastUpdated ?? '')).length).toBeLessThanOrEqual(3);
    expect(after.status.errorCount).toBe(0);
  }, 300_000);
});
