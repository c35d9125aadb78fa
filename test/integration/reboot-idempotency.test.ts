/**
 * A one-shot reboot with a request id (the API's Idempotency-Key) runs once
 * however often it is sent: the chaos round saw the API killed after it had
 * started a reboot and before it answered, and the client's resend rebooted
 * the host a second time. Temporal answers a repeated update id itself; these
 * tests send the repeat under a NEW update id (as a second API process, or one
 * after continue-as-new, would reach the host), so only the host's own memory
 * of the id can stop it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, powerRequestsUpdate, type HostView } from '../../contracts/host';
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

/** The validator's message: the update fails with it as its cause. */
async function refusal(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof WorkflowUpdateFailedError)) throw new Error(`expected the update to be refused, got ${String(err)}`);
  return err.cause?.message ?? '';
}

/** The reboot as the API sends it, but under its own update id each time. */
const send = (name: string, requestId?: string) =>
  handle(name).executeUpdate(powerRequestsUpdate, { args: [{ reboot: { mode: 'hard', ...(requestId ? { requestId } : {}) } }], updateId: uniq('u') });

describe('reboot request ids', () => {
  it('a reboot sent again with its id, after the host continued as new, is not run again; a new id is', async () => {
    const name = await availableHost();
    const firstRun = (await handle(name).describe()).runId;
    await send(name, 'client-42');
    const once = await idle(name, (v) => reboots(v).some((o) => o.outcome === 'succeeded'));
    expect(reboots(once)).toHaveLength(1);
    // The operation pushed the history past 12 events: the host is on a new run now.
    await waitFor(`${name} continued as new`, async () => (await handle(name).describe()).runId !== firstRun);

    const answer = await send(name, 'client-42');
    expect(answer.reboot).toBeUndefined();
    const after = await view(name);
    expect(after.power.reboot).toBeUndefined();
    expect(reboots(after)).toHaveLength(1);

    await send(name, 'client-43');
    const twice = await idle(name, (v) => reboots(v).filter((o) => o.outcome === 'succeeded').length === 2);
    expect(reboots(twice)).toHaveLength(2);
    // Without an id every request is a reboot of its own, as before.
    await send(name);
    await idle(name, (v) => reboots(v).filter((o) => o.outcome === 'succeeded').length === 3);
  });

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

  it('refuses a request id that is not 1-255 visible ASCII characters, changing nothing', async () => {
    const name = await availableHost();
    expect(await refusal(send(name, 'has space'))).toMatch(/^reboot\.requestId: must be 1-255 visible ASCII characters, no spaces$/);
    expect(await refusal(send(name, 'x'.repeat(256)))).toMatch(/^reboot\.requestId: /);
    expect(await refusal(handle(name).executeUpdate(powerRequestsUpdate, { args: [{ reboot: { mode: 'hard', when: 'now' } as never }] }))).toBe(
      'reboot.when: is not accepted (accepted: mode, requestId)',
    );
    const v = await view(name);
    expect(v.power.reboot).toBeUndefined();
    expect(reboots(v)).toHaveLength(0);
  });
});
