/**
 * A worker killed mid-service, in the crash window itself: after Ironic accepted the step's
 * `service` verb and before the worker heard the answer (the proxy holds the answer and kills
 * the worker). The next worker must not start the service again, and the service must end once.
 */
import { describe, expect, it } from 'vitest';
import type { RecordedRequest } from '../../bench/support/ironic-proxy';
import { randomMac, uniq, waitFor } from '../support/harness';
import { useCrashWindow } from '../support/crash-window';
import { setUpdatePolicyUpdate } from '../../contracts/host';

const cw = useCrashWindow('service-window');
const NS = 'service-window';
const IMAGE = { url: 'http://127.0.0.1/img.qcow2', checksum: 'c'.repeat(32), checksumType: 'md5' as const, format: 'qcow2' as const };

const isServiceVerb = (nodeId: string) => (r: RecordedRequest) =>
  r.method === 'PUT' && r.path === `/v1/nodes/${nodeId}/states/provision` && (JSON.parse(r.body) as { target?: string }).target === 'service';

describe('a worker killed after Ironic accepted a service', () => {
  it('does not service twice, and the service ends once with the host still provisioned', async () => {
    const name = uniq('svc');
    const ref = { namespace: NS, name };
    const first = cw.workers.start();
    const spec = { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` }, bootMACAddress: randomMac(), online: true, image: IMAGE };
    await cw.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
    const ready = await waitFor('provisioned', async () => {
      const v = await cw.hosts.get(ref);
      return v.status.provisioning.state === 'provisioned' && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 180_000 });
    const nodeId = ready.status.provisioning.ID;
    await cw.hosts.update(ref, setUpdatePolicyUpdate, [{ firmwareSettings: 'onReboot' }]);
    cw.proxy.onceAnswered(isServiceVerb(nodeId), () => {
      first.kill('SIGKILL');
    });
    await cw.hosts.clean(ref, { steps: [{ name: 'bios', settings: { ProcVirtualization: 'Enabled' } }] });
    await waitFor('the first worker to die', async () => first.signalCode === 'SIGKILL', { timeoutMs: 60_000 });
    cw.workers.start();
    await cw.expireLost(first);
    const done = await waitFor('the service done on the next worker', async () => {
      const v = await cw.hosts.get(ref);
      return !v.currentOperation && !v.cleanRequest ? v : undefined;
    }, { timeoutMs: 180_000 });
    expect(cw.proxy.count(isServiceVerb(nodeId))).toBe(1);
    expect(done.operations.filter((o) => o.kind === 'service').map((o) => o.outcome)).toEqual(['succeeded']);
    expect(done.status).toMatchObject({ errorCount: 0, operationalStatus: 'OK', provisioning: { state: 'provisioned' } });
  }, 300_000);
});
