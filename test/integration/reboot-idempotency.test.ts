/**
 * A one-shot reboot with a request id (the API's Idempotency-Key) runs once
 * however often it is sent: the chaos round saw the API killed after it had
 * started a reboot and before it answered, and the client's resend rebooted
 * the host a second time. Temporal answers a repeated update id itself; these
 * tests send the repeat under a NEW update id (as a second API process, or one
 * after continue-as-new, would reach the host), so only the host's own memory
 * of the id can stop it. Here, the API's part on the real server: the key is
 * both the update id and the request id. The host's memory of ids across
 * continue-as-new and the refused ids run on the time-skipping server
 * (test/unit/host-time-skipping.test.ts), whose update ids behave otherwise
 * across runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';

const NS = 'reboot-ids';
let h: Harness;

beforeAll(async () => {
  // A short history limit: the host continues as new each time it is idle after an operation. A fresh
  // run idles with about 8 events (start, one workflow task, a patch marker, search attributes), under
  // it; a reboot adds about 15 (its update, workflow tasks, two power activities), past it.
  h = await startHarness({ hostOptions: { ...FAST_HOST_OPTIONS, maxHistoryEvents: 12 } });
});
afterAll(async () => {
  await h?.close();
});

const handle = (name: string) => h.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name }));
const view = (name: string): Promise<HostView> => handle(name).query(hostViewQuery);
const reboots = (v: HostView) => v.operations.filter((o) => o.kind === 'reboot');
const idle = (name: string, check: (v: HostView) => boolean = () => true) =>
  waitFor(`${name} idle`, async () => {
    const v = await view(name);
    return !v.currentOperation && !v.power.reboot && v.status.provisioning.state === 'available' && v.status.poweredOn && check(v) ? v : undefined;
  });

async function availableHost(): Promise<string> {
  const name = uniq('rid');
  await h.hosts.put(
    { namespace: NS, name },
    { spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` }, bootMACAddress: randomMac(), online: true }, credentials: { username: 'admin', password: 'pw' } },
  );
  await idle(name);
  return name;
}

describe('reboot request ids', () => {
  it('the API passes the key as the update id and the request id: a resend answers for the first', async () => {
    const name = await availableHost();
    const ref = { namespace: NS, name };
    await h.hosts.reboot(ref, 'hard', 'api-key-1');
    await h.hosts.reboot(ref, 'soft', 'api-key-1');
    const done = await idle(name, (v) => reboots(v).some((o) => o.outcome === 'succeeded'));
    expect(reboots(done)).toHaveLength(1);
    await h.hosts.reboot(ref, 'hard', 'api-key-1');
    expect((await view(name)).power.reboot).toBeUndefined();
    expect(reboots(await view(name))).toHaveLength(1);
  });
});
