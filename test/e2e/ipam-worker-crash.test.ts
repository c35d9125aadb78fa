/**
 * A worker killed with SIGKILL while a pool's allocations are in flight: the
 * updates it had not answered are answered by the next worker, and no claim
 * is lost or given an address another claim holds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { IpPools, type ClaimAllocation } from '../../control/ip-pools';
import { IRONIC_URL, TEMPORAL_ADDRESS } from '../support/env';
import { uniq, waitFor } from '../support/harness';
import { WorkerProcesses } from '../support/worker-process';

let connection: Connection;
const workers = new WorkerProcesses('ipam-crash', () => IRONIC_URL);

beforeAll(async () => {
  connection = await Connection.connect({ address: TEMPORAL_ADDRESS });
});

afterAll(async () => {
  workers.killAll();
  await connection?.close();
});

describe('worker killed during allocation', () => {
  it('loses no claim and gives no address twice', async () => {
    const client = new Client({ connection });
    const opts = { client, taskQueue: workers.taskQueue, timeoutMs: 240_000 };
    const ref = { namespace: 'ipam-crash', name: uniq('pool') };
    const first = workers.start();
    await new IpPools(opts).apply(ref, { namePrefix: 'crash', pools: [{ subnet: '10.30.0.0/22' }] });
    // 30 callers, 10 claims each: 30 updates meet in the pool while the worker dies.
    const callers = Array.from({ length: 30 }, () => new IpPools(opts));
    const claims = Array.from({ length: 300 }, (_, i) => `host-${i}`);
    let answered = 0;
    const all = Promise.all(
      claims.map((claim, i) =>
        callers[i % callers.length]!.allocate(ref, { claim }).then((a: ClaimAllocation) => {
          answered += 1;
          return a;
        }),
      ),
    );
    await waitFor('the first allocation answered', async () => answered > 0, { timeoutMs: 120_000, intervalMs: 5 });
    first.kill('SIGKILL');
    await waitFor('the first worker to die', async () => first.signalCode === 'SIGKILL');
    const answeredBeforeRestart = answered;
    workers.start();
    const got = await all;
    expect(new Set(got.map((a) => a.address)).size).toBe(claims.length);
    const view = await new IpPools(opts).view(ref);
    expect(view.status.indexes).toEqual(Object.fromEntries(got.map((a) => [a.claim, a.address])));
    // Asked again after the crash: the same address each.
    const again = await Promise.all(claims.map((claim) => callers[0]!.allocate(ref, { claim })));
    expect(again.map((a) => a.address)).toEqual(got.map((a) => a.address));
    console.log(`ipam crash: ${answeredBeforeRestart} of ${claims.length} claims answered before the worker died; all ${claims.length} distinct after`);
  }, 300_000);
});
