/**
 * Slow real BMCs get their real answer, never "heartbeat timeout" (issue 10
 * item 8). A proxy in front of sushy-tools (test/support/slow-bmc.ts) serves
 * one request at a time, each after 2.5 s: connecting takes 5 s, a power
 * read 7.5 s, an out-of-band inventory 35 s, past the 30 s heartbeat timeout
 * of the BMC activities and the old 4 s power-check budget. A
 * direct-provisioner host (every step is a BMC call) and Ironic hosts with
 * fast (out-of-band) inspection, on an emulator of this file's own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import type { HostRef, HostSpec } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import { FAST_HOST_OPTIONS, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { SlowBmc } from '../support/slow-bmc';
import { unusedPort } from '../support/ports';
import { ownSushy } from '../bmc/support/sushy';
import { ownIronic, type OwnIronic } from '../support/own-ironic';

const NS = 'slow-bmc';
const DELAY_MS = 2_500;
const SYSTEMS = {
  a: '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000001',
  b: '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000002',
  c: '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000003',
};
const AUTH = `Basic ${Buffer.from('admin:password').toString('base64')}`;

let h: Harness;
let ironic: OwnIronic;
let sushy: ReturnType<typeof ownSushy>;
const bmcs: SlowBmc[] = [];

beforeAll(async () => {
  // An Ironic of its own: Ironic's power sync visits every node in one pass, and these nodes' slow answers would
  // hold up the sync of every other file's nodes on the shared one (a Healthy condition waited minutes for it).
  ironic = ownIronic('slow-bmc-ironic', await unusedPort());
  const ironicUp = ironic.start();
  // Started while Ironic starts (a process of its own each).
  sushy = ownSushy('slow-bmc-sushy', await unusedPort());
  sushy.start();
  await ironicUp;
  h = await startHarness({ ironicUrl: ironic.url, hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 5 } });
}, 180_000);

afterAll(async () => {
  await h?.close();
  for (const b of bmcs) await b.stop();
  sushy?.stop();
  await ironic?.stop();
}, 120_000);

async function slowBmc(): Promise<SlowBmc> {
  const bmc = new SlowBmc(sushy.url, DELAY_MS);
  await bmc.start();
  bmcs.push(bmc);
  return bmc;
}

/** A direct host (`ironic` false) or an Ironic host inspected out of band from the BMC. */
async function slowHost(bmc: SlowBmc, system: string, ironic = false): Promise<HostRef> {
  const ref = { namespace: NS, name: uniq('slow') };
  const spec: HostSpec = ironic
    ? { bmc: { address: `redfish+${bmc.url}${system}`, credentialsName: `${ref.name}-bmc` }, online: false, inspectionMode: 'fast', automatedCleaningMode: 'disabled' }
    : { bmc: { address: `redfish+${bmc.url}${system}`, credentialsName: `${ref.name}-bmc` }, online: false, provisioner: 'direct' };
  await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'password' } });
  return ref;
}

/** Ends the host and removes its node, so Ironic stops polling a BMC that goes away with this file. */
async function done(ref: HostRef): Promise<void> {
  const nodeId = (await view(ref)).status.provisioning.ID;
  await h.client.workflow.getHandle(hostWorkflowId(ref)).terminate('test done');
  if (nodeId) {
    await h.ironic.setMaintenance(nodeId, 'test done').catch(() => undefined);
    await h.ironic.deleteNode(nodeId).catch(() => undefined);
  }
}

const settled = (ref: HostRef, what: string, probe: (v: HostView) => boolean) =>
  waitFor(what, async () => {
    const v = await view(ref);
    return probe(v) ? v : undefined;
  }, { timeoutMs: 300_000, intervalMs: 1000 });

const view = (ref: HostRef): Promise<HostView> => h.client.workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery);

/** What sushy itself says, not through the slow proxy. */
async function sushyPower(system: string): Promise<string> {
  const res = await request(`${sushy.url}${system}`, { headers: { authorization: AUTH } });
  return ((await res.body.json()) as { PowerState: string }).PowerState;
}

describe('a slow Redfish BMC (2.5 s per request, one at a time)', () => {
  it.concurrent('a direct host registers and inspects (a 35 s inventory), and the power check reads it and corrects a change', async () => {
    const bmc = await slowBmc();
    const ref = await slowHost(bmc, SYSTEMS.a);
    const available = await settled(ref, 'available', (v) => v.status.provisioning.state === 'available' && !v.currentOperation);
    expect(available.status.errorMessage).toBe('');
    expect(available.status.errorCount).toBe(0);
    expect(available.operations.map((o) => `${o.kind}:${o.outcome}`)).toEqual(['enroll:succeeded', 'inspect:succeeded', 'prepare:succeeded']);
    expect(available.status.hardware?.cpu?.count).toBeGreaterThan(0);

    // Powered on behind the host's back (straight at the emulator): a check (three slow requests) sees it, the host powers it off again.
    await request(`${sushy.url}${SYSTEMS.a}/Actions/ComputerSystem.Reset`, {
      method: 'POST',
      headers: { authorization: AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ ResetType: 'On' }),
    });
    await waitFor('sushy on', async () => (await sushyPower(SYSTEMS.a)) === 'On');
    const corrected = await settled(ref, 'mismatch found and corrected', (v) => v.power.lastMismatch !== undefined && !v.currentOperation && !v.status.poweredOn);
    expect(await sushyPower(SYSTEMS.a)).toBe('Off');
    expect(corrected.power.lastMismatch).toMatchObject({ observedOn: true, recordedOn: false });
    expect(corrected.status.errorMessage).toBe('');
    await done(ref);
  }, 600_000);

  it.concurrent('an Ironic host inspected from the BMC (30 s heartbeat timeout) reaches available', async () => {
    const bmc = await slowBmc();
    const ref = await slowHost(bmc, SYSTEMS.b, true);
    const available = await settled(ref, 'available', (v) => v.status.provisioning.state === 'available' && !v.currentOperation);
    expect(available.status.errorMessage).toBe('');
    expect(available.operations.filter((o) => o.outcome !== 'succeeded')).toEqual([]);
    expect(available.status.hardware?.cpu?.count).toBeGreaterThan(0);
    await done(ref);
  }, 600_000);

  it.concurrent('a resource the BMC refuses after 30 s of slow answers fails with the BMC\'s own error', async () => {
    const bmc = await slowBmc();
    // The drive is the inventory's last request (the 14th of the inspection).
    bmc.refuse((path) => path.includes('/Drives/'), 403, 'the account may not read drives');
    const ref = await slowHost(bmc, SYSTEMS.c, true);
    const failed = await settled(ref, 'inspection failure recorded', (v) => v.status.errorCount > 0);
    expect(failed.status.errorMessage).not.toMatch(/heartbeat|timed out|timeout/i);
    expect(failed.status.errorMessage).toMatch(/HTTP 403: the BMC denied access of user "admin".*the account may not read drives/);
    expect(bmc.requests.some((r) => r.path.includes('/Drives/'))).toBe(true);
    await done(ref);
  }, 600_000);
});
