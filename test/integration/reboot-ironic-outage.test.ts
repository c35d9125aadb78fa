/**
 * A reboot through Ironic while Ironic stops answering for a while (a
 * restart, a burst of 5xx): the reboot operation waits it out and the host is
 * powered off once. With the BMC's five quick attempts (~15 s) the operation
 * failed after Ironic had done the reboot, and the next reboot operation
 * powered the host off a second time (the chaos suite found it). The outage
 * starts once Ironic has accepted the reboot's power-on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import { IRONIC_URL } from '../support/env';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { IronicProxy, isPowerChange, reachedPeer } from '../../bench/support/ironic-proxy';

let proxy: IronicProxy;
let h: Harness;

beforeAll(async () => {
  proxy = new IronicProxy(IRONIC_URL);
  await proxy.start();
  h = await startHarness({ ironicUrl: proxy.url, hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 0 } });
});
afterAll(async () => {
  await h?.close();
  await proxy?.stop();
});

describe('a reboot through Ironic during an Ironic outage', () => {
  it('waits the outage out and powers the host off once', async () => {
    const ref = { namespace: 'reboot-outage', name: uniq('host') };
    const view = (): Promise<HostView> => h.client.workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery);
    await h.hosts.put(ref, {
      spec: { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true },
      credentials: { username: 'admin', password: 'pw' },
    });
    const ready = await waitFor('available and on', async () => {
      const v = await view();
      return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 120_000 });
    const nodeId = ready.status.provisioning.ID;
    const mine = (path: string): boolean => path.includes(nodeId);
    // Once Ironic took the power-on, every request about the node is a 503 for 25 s: past the ~15 s of the
    // BMC's five quick attempts, with room for a loaded machine's slower attempts.
    let outageUntil = 0;
    proxy.interceptor = (r) => {
      if (Date.now() < outageUntil && mine(r.path)) return { kind: 'answer', status: 503, faultstring: 'test: Ironic is restarting' };
      if (!outageUntil && mine(r.path) && isPowerChange(r) && r.body.includes('"power on"')) outageUntil = Date.now() + 25_000;
      return undefined;
    };
    const mark = proxy.requests.length;
    await h.hosts.reboot(ref, 'hard');
    const done = await waitFor('the reboot to end', async () => {
      const v = await view();
      return !v.currentOperation && !v.power.reboot && v.operations.some((o) => o.kind === 'reboot' && o.outcome !== 'running') ? v : undefined;
    }, { timeoutMs: 240_000, intervalMs: 500 });
    proxy.interceptor = undefined;
    expect(outageUntil).toBeGreaterThan(0); // the outage did happen
    const offs = proxy.requests.slice(mark).filter((r) => reachedPeer(r) && mine(r.path) && isPowerChange(r) && !r.body.includes('"power on"'));
    expect(offs).toHaveLength(1);
    expect(done.operations.filter((o) => o.kind === 'reboot').map((o) => o.outcome)).toEqual(['succeeded']);
    expect(done.status.poweredOn).toBe(true);
  }, 400_000);
});
