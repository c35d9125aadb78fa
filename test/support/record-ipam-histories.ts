/**
 * Records the IP pool workflow's shapes for the replay test: a pool created,
 * claims allocated in one batch and one by one, a full pool, a release and a
 * reuse, then deleted (ippool-lifecycle-v1.json); and a pool that continued
 * as new carrying its table (ippool-continued-v1-run1.json, the first run).
 * Never overwrites a fixture.
 * `node --import tsx test/support/record-ipam-histories.ts` on a running test stack.
 */
import { IpamError, IpPools } from '../../clients/temporal/ip-pools';
import { ipPoolWorkflowId } from '../../workflows/ippool-definitions';
import { startHarness } from './harness';
import { assertNewFixtures, saveHistory } from './record-fixture';

const LIFECYCLE = 'ippool-lifecycle-v1.json';
const CONTINUED = 'ippool-continued-v1-run1.json';
assertNewFixtures(LIFECYCLE, CONTINUED);
const h = await startHarness();
try {
  const pools = new IpPools({ client: h.client, taskQueue: h.taskQueue });
  const ref = { namespace: 'replay', name: `pool-${Date.now()}` };
  await pools.apply(ref, { namePrefix: 'replay', pools: [{ start: '10.0.0.10', end: '10.0.0.13' }], preAllocations: { fixed: '10.0.0.13' }, gateway: '10.0.0.1', prefix: 24 });
  await Promise.all(['a', 'b'].map((claim) => pools.allocate(ref, { claim })));
  await pools.allocate(ref, { claim: 'c' });
  await pools.allocate(ref, { claim: 'd' }).catch((err: unknown) => {
    if (!(err instanceof IpamError && err.type === 'PoolExhausted')) throw err;
  });
  await pools.allocate(ref, { claim: 'fixed' });
  await pools.release(ref, 'a');
  await pools.allocate(ref, { claim: 'd' });
  await pools.apply(ref, { namePrefix: 'replay', pools: [{ start: '10.0.0.10', end: '10.0.0.20' }], preAllocations: { fixed: '10.0.0.13' } });
  for (const claim of ['b', 'c', 'd', 'fixed']) await pools.release(ref, claim);
  await pools.remove(ref);
  await h.client.workflow.getHandle(ipPoolWorkflowId(ref)).result();
  saveHistory(ipPoolWorkflowId(ref), LIFECYCLE);

  const small = new IpPools({ client: h.client, taskQueue: h.taskQueue, maxHistoryEvents: 20 });
  const ref2 = { namespace: 'replay', name: `pool-continued-${Date.now()}` };
  await small.apply(ref2, { namePrefix: 'replay', pools: [{ subnet: '10.1.0.0/24' }] });
  const firstRun = (await h.client.workflow.getHandle(ipPoolWorkflowId(ref2)).describe()).runId;
  for (let i = 0; i < 8; i++) await small.allocate(ref2, { claim: `c${i}` });
  saveHistory(ipPoolWorkflowId(ref2), CONTINUED, firstRun);
  await h.client.workflow.getHandle(ipPoolWorkflowId(ref2)).cancel();
} finally {
  await h.close();
}
