/**
 * `spec.online: false` powers a host off the way Metal3 does (issue 16 item 9,
 * patch soft-power-off): Ironic is asked for a soft power off (a shutdown, hard
 * if it does not finish within the soft timeout), not a hard one. On the real
 * Temporal and Ironic (fake-hardware), Ironic's power requests recorded by the proxy.
 * The rule that a host whose last operation failed is powered off hard at once
 * is in test/unit/power-requests.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { HostSpec } from '../../model/host';
import type { HostView } from '../../contracts/host';
import { isPowerChange } from '../../bench/support/ironic-proxy';
import { randomMac, uniq, waitFor } from '../support/harness';
import { useProxiedHarness } from '../support/proxied-harness';

const suite = useProxiedHarness({ hostOptions: { errorBackoffSeconds: 1, maxErrorBackoffSeconds: 4, softPowerOffSeconds: 5 } });

describe('spec.online false', () => {
  it('asks Ironic for a soft power off, not a hard one', async () => {
    const { h, proxy } = suite;
    const ref = { namespace: 'softoff', name: uniq('off') };
    const spec: HostSpec = { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true };
    const view = async (): Promise<HostView> => (await h.hosts.get(ref)) as HostView;
    await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
    const { status } = await waitFor(
      'available and on',
      async () => {
        const v = await view();
        return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation ? v : undefined;
      },
      { timeoutMs: 90_000 },
    );
    const node = status.provisioning.ID;
    const targets = (): string[] =>
      proxy.requests.filter((r) => isPowerChange(r) && r.path === `/v1/nodes/${node}/states/power`).map((r) => (JSON.parse(r.body) as { target: string }).target);
    const before = targets().length;

    await h.hosts.put(ref, { spec: { ...spec, online: false } });
    await waitFor('off', async () => {
      const v = await view();
      return !v.status.poweredOn && !v.currentOperation ? v : undefined;
    });
    // Before the patch: "power off".
    expect(targets().slice(before)).toEqual(['soft power off']);
    expect((await view()).status.errorCount).toBe(0);
  }, 120_000);
});
