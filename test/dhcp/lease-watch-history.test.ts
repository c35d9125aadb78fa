/**
 * Waiting for a DHCP lease costs a host no history: one activity reads the
 * lease at the host's check period and returns only when it changed
 * (workflows/host/dhcp.ts, LeaseWatch). With a 1 s check, a host whose MAC
 * has asked for nothing keeps the same history while the watch reads many
 * times (counted from the activity's heartbeats); once a real DHCP client
 * (busybox udhcpc) takes the lease, it shows in status.dhcp. Real dnsmasq in
 * a network namespace, real Ironic (fake-hardware), the test stack's Temporal.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import type { WorkflowHandle } from '@temporalio/client';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery } from '../../contracts/host';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { askLease, dhcpUnavailable, startFreshSite, stopSite, type TestSite } from '../support/dnsmasq-site';

const unavailable = dhcpUnavailable();
if (unavailable) console.warn(`DHCP lease watch test skipped: ${unavailable}`);

const NET = '10.251.9';
let state = '';
let site: TestSite | undefined;
let h: Harness | undefined;

/** The lease watch's reads so far (its last heartbeat reached the server), or undefined when none runs. */
async function watchReads(handle: WorkflowHandle): Promise<number | undefined> {
  const pending = (await handle.describe()).raw.pendingActivities ?? [];
  const watch = pending.find((a) => a.activityType?.name === 'watchDhcpLease');
  if (!watch) return undefined;
  const payload = watch.heartbeatDetails?.payloads?.[0];
  return payload ? defaultPayloadConverter.fromPayload<{ reads: number }>(payload as never).reads : 0;
}

const historyLength = async (handle: WorkflowHandle): Promise<number> => (await handle.fetchHistory()).events?.length ?? 0;

describe.skipIf(unavailable !== null)('the DHCP lease watch', () => {
  beforeAll(async () => {
    ({ state, site } = await startFreshSite('metalflow-lease-watch-', 'lw', NET, 'ignore'));
    // Power checks off for the run, so nothing but the lease could add to the history meanwhile.
    h = await startHarness({ dhcpSites: { lw: site }, hostOptions: { ...FAST_HOST_OPTIONS, dhcpLeaseCheckSeconds: 1, powerCheckSeconds: 0, watchedPowerCheckSeconds: 0 } });
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    if (site) await stopSite(state, site).catch((err: unknown) => console.error('stopping the DHCP site:', err));
    if (state) await rm(state, { recursive: true, force: true });
  });

  it('reads the lease many times without growing the history, and shows the lease once a client takes it', async () => {
    const ref = { namespace: 'dhcp', name: uniq('lw') };
    const mac = randomMac();
    await h!.hosts.put(ref, {
      spec: { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, online: true, bootMACAddress: mac, dhcp: { site: 'lw', address: `${NET}.31` } },
      credentials: { username: 'admin', password: 'pw' },
    });
    const handle = h!.client.workflow.getHandle(hostWorkflowId(ref));
    await waitFor('available', async () => (await handle.query(hostViewQuery)).status.provisioning.state === 'available', { timeoutMs: 120_000 });
    // Settled: the watch runs and has heartbeated at least once.
    const firstReads = await waitFor('the lease watch heartbeating', async () => {
      const reads = await watchReads(handle);
      return reads !== undefined && reads > 0 ? reads : undefined;
    }, { timeoutMs: 90_000 });
    const before = await historyLength(handle);

    // Many more lease periods pass (each a read of the leases file), as the watch's own count says.
    const laterReads = await waitFor('five more reads', async () => {
      const reads = await watchReads(handle);
      return reads !== undefined && reads >= firstReads + 5 ? reads : undefined;
    }, { timeoutMs: 90_000 });
    const after = await historyLength(handle);
    expect(after, `history after ${laterReads - firstReads} more lease reads`).toBe(before);
    expect((await handle.query(hostViewQuery)).status.dhcp?.address).toBeUndefined();

    // A client takes the lease: it reaches status.dhcp, for a few events.
    expect(await askLease(site!, mac)).toBe(`${NET}.31`);
    const view = await waitFor('the lease in status.dhcp', async () => {
      const v = await handle.query(hostViewQuery);
      return v.status.dhcp?.address === `${NET}.31` ? v : undefined;
    });
    expect(view.status.dhcp).toMatchObject({ site: 'lw', reservedAddress: `${NET}.31`, address: `${NET}.31` });
    expect(await historyLength(handle)).toBeLessThan(before + 20);
  }, 300_000);
});
