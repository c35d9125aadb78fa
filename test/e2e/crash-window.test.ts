/**
 * The crash window itself: a worker process killed after Ironic accepted a
 * verb and before the worker heard the answer (the proxy holds the answer
 * and kills the worker). The next worker must not send it again.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Connection } from '@temporalio/client';
import type { ChildProcess } from 'node:child_process';
import type { HostService } from '../../api/host-service';
import { IronicClient } from '../../clients/ironic/client';
import type { HostSpec } from '../../types/host';
import { IRONIC_URL, TEMPORAL_ADDRESS } from '../support/env';
import { IronicProxy, isDeploy, isPowerChange, type RecordedRequest } from '../support/ironic-proxy';
import { FAST_HOST_OPTIONS, randomMac, uniq, waitFor } from '../support/harness';
import { WorkerProcesses } from '../support/worker-process';

let proxy: IronicProxy;
let connection: Connection;
let hosts: HostService;
const ironic = new IronicClient({ url: IRONIC_URL });
const workers = new WorkerProcesses('window', () => proxy.url);

beforeAll(async () => {
  proxy = new IronicProxy(IRONIC_URL);
  await proxy.start();
  connection = await Connection.connect({ address: TEMPORAL_ADDRESS });
  // A failed operation waits long before its retry: only the crashed attempt's own requests are counted.
  hosts = workers.hostService(connection, { ...FAST_HOST_OPTIONS, errorBackoffSeconds: 600, maxErrorBackoffSeconds: 600 });
});
// Each test kills the worker it started; one left from an earlier test would take over its work.
afterEach(() => workers.killAll());
afterAll(async () => {
  workers.killAll();
  await proxy?.stop();
  await connection?.close();
});

const spec = (name: string, over: Partial<HostSpec> = {}): HostSpec => ({
  bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` },
  bootMACAddress: randomMac(),
  online: true,
  ...over,
});

async function killedOnAnswer(worker: ChildProcess): Promise<void> {
  worker.kill('SIGKILL');
  await waitFor('the worker to die', async () => worker.signalCode === 'SIGKILL');
}

const forNode = (nodeId: string, match: (r: RecordedRequest) => boolean) => (r: RecordedRequest) => match(r) && r.path.includes(nodeId);

describe('a worker killed after Ironic accepted a verb', () => {
  it('does not reboot twice', async () => {
    const ref = { namespace: 'window', name: uniq('reboot') };
    const first = workers.start();
    await hosts.put(ref, { spec: spec(ref.name), credentials: { username: 'admin', password: 'pw' } });
    const ready = await waitFor('available and on', async () => {
      const v = await hosts.get(ref);
      return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 90_000 });
    const nodeId = ready.status.provisioning.ID;
    const mark = proxy.requests.length;
    proxy.onceAnswered(forNode(nodeId, isPowerChange), () => killedOnAnswer(first));
    await hosts.reboot(ref, 'hard');
    await waitFor('the first worker to die', async () => first.signalCode === 'SIGKILL', { timeoutMs: 60_000 });
    workers.start();
    const done = await waitFor('the reboot to finish on the next worker', async () => {
      const v = await hosts.get(ref);
      return v.operations.some((o) => o.kind === 'reboot' && o.outcome === 'succeeded') && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 150_000 });
    const targets = proxy.requests.slice(mark).filter(forNode(nodeId, isPowerChange)).map((r) => (JSON.parse(r.body) as { target: string }).target);
    // One request took the host down; the rest only brought it back.
    expect(targets.filter((t) => t !== 'power on')).toHaveLength(1);
    expect(done.status.poweredOn).toBe(true);
    expect((await ironic.getNode(nodeId))?.power_state).toBe('power on');
  });

  it('does not deploy twice after a deploy that failed at once', async () => {
    const ref = { namespace: 'window', name: uniq('deploy') };
    const first = workers.start();
    // Cleaning would go through the agent too: torn down without it.
    await hosts.put(ref, { spec: spec(ref.name, { automatedCleaningMode: 'disabled' }), credentials: { username: 'admin', password: 'pw' } });
    const ready = await waitFor('available', async () => {
      const v = await hosts.get(ref);
      return v.status.provisioning.state === 'available' && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 90_000 });
    const nodeId = ready.status.provisioning.ID;
    // Ironic's agent deploy checks the image URL first: nothing listens there, so the deploy fails within a second.
    await ironic.patchNode(nodeId, [{ op: 'replace', path: '/deploy_interface', value: 'direct' }]);
    proxy.onceAnswered(forNode(nodeId, isDeploy), () => killedOnAnswer(first));
    await hosts.setImage(ref, { url: 'http://127.0.0.1:9/nothing.qcow2', checksum: 'f'.repeat(64), checksumType: 'sha256', format: 'qcow2' });
    await waitFor('the first worker to die', async () => first.signalCode === 'SIGKILL', { timeoutMs: 60_000 });
    workers.start();
    const failed = await waitFor('the provision to fail on the next worker', async () => {
      const v = await hosts.get(ref);
      return v.operations.find((o) => o.kind === 'provision' && o.outcome === 'failed');
    }, { timeoutMs: 150_000 });
    expect(failed.error).toMatch(/deploy failed/);
    expect(proxy.count(forNode(nodeId, isDeploy))).toBe(1);
  });
});
