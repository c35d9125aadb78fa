/**
 * IP pools on the real Temporal server: concurrent claims from one pool get
 * distinct addresses (and the pool continues as new under them, keeping its
 * table), the same claim asked again gets the same address, a released
 * address is reused only after its release, a full pool is a clear error,
 * pre-allocations are honoured, a pool with allocations cannot be deleted,
 * and a cancelled pool ends without a failure.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IpamError, IpPools } from '../../control/ip-pools';
import { ipPoolWorkflowId } from '../../contracts/ippool';
import { startHarness, uniq, type Harness } from '../support/harness';

const CLAIMS = 500;
let h: Harness;
let pools: IpPools;

beforeAll(async () => {
  h = await startHarness();
  // A low continue-as-new threshold: the claims asked again one by one cross it, so the table must be carried over.
  pools = new IpPools({ client: h.client, taskQueue: h.taskQueue, maxHistoryEvents: 40, timeoutMs: 120_000 });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

const poolRef = () => ({ namespace: 'ipam', name: uniq('pool') });

describe('IP pool workflow', () => {
  it(`gives ${CLAIMS} concurrent claims ${CLAIMS} distinct addresses, the same again when asked again`, async () => {
    const ref = poolRef();
    // A /22: 1,022 addresses after the network address, more than the round needs.
    await pools.apply(ref, { namePrefix: 'prov', pools: [{ subnet: '10.20.0.0/22' }], prefix: 22, gateway: '10.20.0.1', preAllocations: { gw: '10.20.0.1' } });
    const claims = Array.from({ length: CLAIMS }, (_, i) => `host-${i}`);
    // Five callers (as five API processes or controllers would be), each batching its own claims: their updates meet in the one workflow.
    const callers = Array.from({ length: 5 }, () => new IpPools({ client: h.client, taskQueue: h.taskQueue, maxHistoryEvents: 40, timeoutMs: 120_000 }));
    const got = await Promise.all(claims.map((claim, i) => callers[i % callers.length]!.allocate(ref, { claim })));
    const addresses = got.map((a) => a.address);
    expect(new Set(addresses).size).toBe(CLAIMS);
    // The pre-allocated gateway address is never handed to another claim.
    expect(addresses).not.toContain('10.20.0.1');
    for (const a of got) expect(a).toMatchObject({ prefix: 22, gateway: '10.20.0.1', name: `prov-${a.address.replace(/\./g, '-')}` });
    // One at a time: an update each, so the pool continues as new several times on the way.
    const again: string[] = [];
    for (const claim of claims.slice(0, 20)) again.push((await pools.allocate(ref, { claim })).address);
    expect(again).toEqual(addresses.slice(0, 20));
    const view = await pools.view(ref);
    expect(view.allocated).toBe(CLAIMS);
    expect(view.size).toBe('1023');
    expect(Object.fromEntries(got.map((a) => [a.claim, a.address]))).toEqual(view.status.indexes);
    // It continued as new (threshold 40 events), the table intact.
    const runs: string[] = [];
    for await (const wf of h.client.workflow.list({ query: `WorkflowId = '${ipPoolWorkflowId(ref)}'` })) runs.push(wf.runId);
    expect(runs.length).toBeGreaterThan(1);
  }, 180_000);

  it('reuses a released address only after its release; a full pool names itself and its size', async () => {
    const ref = poolRef();
    await pools.apply(ref, { namePrefix: 'small', pools: [{ start: '192.168.5.10', end: '192.168.5.12' }], preAllocations: { fixed: '192.168.5.12' } });
    const a = await pools.allocate(ref, { claim: 'a' });
    const b = await pools.allocate(ref, { claim: 'b' });
    expect([a.address, b.address]).toEqual(['192.168.5.10', '192.168.5.11']);
    const full = await pools.allocate(ref, { claim: 'c' }).catch((e: unknown) => e);
    expect(full).toBeInstanceOf(IpamError);
    expect(full).toMatchObject({ type: 'PoolExhausted' });
    expect((full as IpamError).message).toContain(`pool ${ref.namespace}/${ref.name} has 3 address(es)`);
    // The pre-allocated claim still gets its reserved address.
    expect((await pools.allocate(ref, { claim: 'fixed' })).address).toBe('192.168.5.12');
    expect(await pools.release(ref, 'a')).toMatchObject({ address: '192.168.5.10' });
    expect(await pools.release(ref, 'a')).toBeNull();
    expect((await pools.allocate(ref, { claim: 'c' })).address).toBe('192.168.5.10');
    // A requested address (Metal3's ipAddress annotation) held by another claim is refused.
    await expect(pools.allocate(ref, { claim: 'd', requestedAddress: '192.168.5.11' })).rejects.toMatchObject({ type: 'AddressUnavailable' });
  }, 60_000);

  it('refuses a bad spec field by field, a spec that strands allocations, and deleting a pool in use', async () => {
    const ref = poolRef();
    await expect(pools.apply(ref, { namePrefix: 'p', pools: [{ start: '10.0.0.9', end: '10.0.0.1' }] })).rejects.toMatchObject({
      type: 'InvalidRequest',
      fields: [{ field: 'spec.pools[0].end' }],
    });
    await pools.apply(ref, { namePrefix: 'p', pools: [{ start: '10.0.0.1', end: '10.0.0.9' }] });
    await pools.allocate(ref, { claim: 'x' });
    await expect(pools.apply(ref, { namePrefix: 'p', pools: [{ start: '10.0.0.2', end: '10.0.0.9' }] })).rejects.toMatchObject({ type: 'InvalidRequest' });
    await expect(pools.remove(ref)).rejects.toMatchObject({ type: 'Conflict' });
    await pools.release(ref, 'x');
    await pools.remove(ref);
    await expect(pools.allocate(ref, { claim: 'y' })).rejects.toMatchObject({ type: 'NotFound' });
  }, 60_000);

  it('ends without a failure when cancelled', async () => {
    const ref = poolRef();
    await pools.apply(ref, { namePrefix: 'p', pools: [{ subnet: '10.9.0.0/24' }] });
    const handle = h.client.workflow.getHandle(ipPoolWorkflowId(ref));
    await handle.cancel();
    await handle.result();
    expect((await handle.describe()).status.name).toBe('COMPLETED');
  }, 60_000);
});
