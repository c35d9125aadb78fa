/**
 * A worker process killed with SIGKILL in the middle of provisioning: a new
 * worker finishes the job, and Ironic sees exactly one deploy.
 */
import { operationEvents } from '../support/operation-history';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Connection } from '@temporalio/client';
import type { HostService } from '../../api/host-service';
import { IRONIC_URL, TEMPORAL_ADDRESS } from '../support/env';
import { IronicProxy, isDeploy } from '../../bench/support/ironic-proxy';
import { randomMac, uniq, waitFor } from '../support/harness';
import { WorkerProcesses } from '../support/worker-process';

let proxy: IronicProxy;
let connection: Connection;
let hosts: HostService;
const workers = new WorkerProcesses('crash', () => proxy.url);

beforeAll(async () => {
  proxy = new IronicProxy(IRONIC_URL);
  await proxy.start();
  connection = await Connection.connect({ address: TEMPORAL_ADDRESS });
  hosts = workers.hostService(connection);
});

afterAll(async () => {
  workers.killAll();
  await proxy?.stop();
  await connection?.close();
});

describe('worker killed during provisioning', () => {
  it('reaches provisioned on a new worker with exactly one Ironic deploy', async () => {
    const ref = { namespace: 'crash', name: uniq('host') };
    // Hold the deploy request in the proxy so the worker dies with it in flight.
    proxy.hold(isDeploy, 3000);
    const first = workers.start();
    await hosts.put(ref, {
      spec: {
        bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc-secret` },
        bootMACAddress: randomMac(),
        online: true,
        image: { url: 'http://127.0.0.1/images/crash.qcow2', checksum: 'e'.repeat(64), format: 'qcow2' },
      },
      credentials: { username: 'admin', password: 'pw' },
    });
    await waitFor('the deploy request to be in flight', async () => proxy.count(isDeploy) >= 1, { timeoutMs: 90_000 });
    expect((await hosts.get(ref)).status.provisioning.state).toBe('provisioning');
    first.kill('SIGKILL');
    await waitFor('the first worker to die', async () => first.signalCode === 'SIGKILL');
    const deploysBeforeRestart = proxy.count(isDeploy);

    workers.start();
    await workers.expireLost(connection, first);
    const done = await waitFor(
      'provisioned after the crash',
      async () => {
        const v = await hosts.get(ref);
        return v.status.provisioning.state === 'provisioned' ? v : undefined;
      },
      { timeoutMs: 90_000 },
    );
    expect(done.status.operationalStatus).toBe('OK');
    expect(proxy.count(isDeploy)).toBe(1);
    const provisions = done.operations.filter((o) => o.kind === 'provision');
    expect(provisions).toHaveLength(1);
    expect(provisions[0]!.outcome).toBe('succeeded');
    expect(deploysBeforeRestart).toBe(1);
    // The deploy activity really died with the worker: a later attempt finished it.
    const attempts = (await operationEvents(hosts.client, ref, provisions[0]!))
      .filter((e) => e.activityTaskStartedEventAttributes)
      .map((e) => e.activityTaskStartedEventAttributes!.attempt);
    expect(Math.max(...attempts.map(Number))).toBeGreaterThan(1);
  });
});
