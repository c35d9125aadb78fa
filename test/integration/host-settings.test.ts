/**
 * The host's own spec.raid and spec.firmware (Metal3's), applied as the `raid` and `bios` clean
 * steps while the host is preparing, on the real dev server and the real Ironic (through the
 * recording proxy, to count what reaches it). What was applied is read from Ironic's own records.
 * fake-hardware in Ironic 39 has a real bios clean step and no RAID clean step (clean.test.ts).
 */
import { describe, expect, it } from 'vitest';
import type { HostSpec } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import type { hostWorkflow } from '../../workflows/host/host';
import { ApiError } from '../../api/host-service';
import { IRONIC_URL } from '../support/env';
import { randomMac, uniq, waitFor } from '../support/harness';
import { hostsRemovedAfterAll, useProxiedHarness } from '../support/proxied-harness';
import { callApi, serveApi } from '../support/api-client';

const ctx = useProxiedHarness();
const NS = 'host-settings';
const ref = (name: string) => ({ namespace: NS, name });
const view = (name: string): Promise<HostView> => ctx.h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref(name))).query(hostViewQuery);
const idleIn = (name: string, state: string, cleans?: number) => async () => {
  const v = await view(name);
  const settled = v.status.provisioning.state === state && v.currentOperation === undefined;
  return settled && (cleans === undefined || cleans === v.operations.filter((o) => o.kind === 'clean').length) ? v : undefined;
};
const IMAGE = { url: 'http://127.0.0.1/img.qcow2', checksum: 'c'.repeat(32), checksumType: 'md5' as const, format: 'qcow2' as const };

const created = hostsRemovedAfterAll(ctx, NS);

function hostSpec(name: string, mac: string, over: Partial<HostSpec>): HostSpec {
  return { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` }, bootMACAddress: mac, online: true, ...over };
}
async function create(name: string, over: Partial<HostSpec>): Promise<(o: Partial<HostSpec>) => Promise<HostView>> {
  created.push(name);
  const mac = randomMac();
  await ctx.h.hosts.put(ref(name), { spec: hostSpec(name, mac, over), credentials: { username: 'admin', password: 'pw' } });
  return async (o) => (await ctx.h.hosts.put(ref(name), { spec: hostSpec(name, mac, o) })).view;
}

const biosOf = async (nodeId: string): Promise<Record<string, string | null>> => {
  const res = await fetch(`${IRONIC_URL}/v1/nodes/${nodeId}/bios`, { headers: { 'x-openstack-ironic-api-version': '1.81' } });
  const { bios } = (await res.json()) as { bios: { name: string; value: string | null }[] };
  return Object.fromEntries(bios.map((b) => [b.name, b.value]));
};
const verbsTo = (nodeId: string) => () => ctx.proxy.count((r) => r.method === 'PUT' && r.path === `/v1/nodes/${nodeId}/states/provision`);

describe('spec.raid and spec.firmware', () => {
  it('applies spec.firmware while preparing, before the host is first available; the same spec again runs nothing, a change runs it again', async () => {
    const name = uniq('fw');
    const apply = await create(name, { firmware: { virtualizationEnabled: true, sriovEnabled: false } });
    const first = await waitFor('available', idleIn(name, 'available'), { timeoutMs: 180_000 });
    const nodeId = first.status.provisioning.ID;
    expect(await biosOf(nodeId)).toMatchObject({ ProcVirtualization: 'Enabled', SriovGlobalEnable: 'Disabled' });
    const kinds = first.operations.map((o) => o.kind);
    // Once, in preparing, before the prepare that makes the host available; recorded as BMO records it.
    expect(kinds.filter((k) => k === 'clean')).toHaveLength(1);
    expect(kinds.indexOf('clean')).toBeLessThan(kinds.lastIndexOf('prepare'));
    expect(first.operations.find((o) => o.kind === 'clean')).toMatchObject({ state: 'preparing', outcome: 'succeeded', steps: ['bios'], note: 'clean steps: bios' });
    expect(first.status.provisioning.firmware).toEqual({ virtualizationEnabled: true, sriovEnabled: false });

    // Another field changes, the firmware flags do not: no clean (the next change shows there were two cleans in all).
    const verbs = verbsTo(nodeId);
    const before = verbs();
    await apply({ firmware: { virtualizationEnabled: true, sriovEnabled: false }, description: 'rack 7' });
    await apply({ firmware: { virtualizationEnabled: false, sriovEnabled: false }, description: 'rack 7' });
    const second = await waitFor('the change applied', idleIn(name, 'available', 2), { timeoutMs: 180_000 });
    expect(await biosOf(nodeId)).toMatchObject({ ProcVirtualization: 'Disabled' });
    expect(second.status.provisioning.firmware).toEqual({ virtualizationEnabled: false, sriovEnabled: false });
    expect(second.operations.filter((o) => o.kind === 'clean').at(-1)).toMatchObject({ state: 'preparing', outcome: 'succeeded', steps: ['bios'] });
    // manage, clean (and back): one manual clean for the change.
    expect(verbs() - before).toBeGreaterThan(0);

    // A flag Ironic already reports with that value: the step is skipped, no verb, no reboot.
    const sent = verbs();
    await apply({ firmware: { sriovEnabled: false }, description: 'rack 7' });
    const third = await waitFor('the unchanged flag seen', idleIn(name, 'available', 3), { timeoutMs: 180_000 });
    expect(third.operations.filter((o) => o.kind === 'clean').at(-1)).toMatchObject({ outcome: 'succeeded', note: 'clean steps: bios skipped (the BIOS already has these settings)' });
    expect(verbs()).toBe(sent);
    expect(third.status.provisioning.firmware).toEqual({ sriovEnabled: false });
  }, 400_000);

  it("records spec.raid that Ironic fails as a preparation error with Ironic's reason, and is fixed by correcting the spec", async () => {
    const name = uniq('raid');
    const apply = await create(name, { raid: { hardwareRAIDVolumes: [{ level: '1', sizeGibibytes: 100, name: 'root' }] }, firmware: { virtualizationEnabled: true } });
    const retried = async () => ((await view(name)).status.errorCount >= 2 ? view(name) : undefined);
    const failed = await waitFor('the raid step failed and was retried', retried, { timeoutMs: 180_000 });
    expect([failed.status.provisioning.state, failed.status.errorType]).toEqual(['preparing', 'preparation error']);
    expect(failed.status.errorMessage).toMatch(/clean step raid failed: .*node does not support this clean step: \{'interface': 'raid', 'step': 'delete_configuration'/);
    expect(failed.operations.filter((o) => o.kind === 'clean').every((o) => o.outcome === 'running' || (o.outcome === 'failed' && o.step === 'raid'))).toBe(true);
    expect(failed.status.provisioning.raid).toBeUndefined();
    const nodeId = failed.status.provisioning.ID;
    expect(await biosOf(nodeId)).toEqual({});

    // Invalid: refused naming the field, nothing sent to Ironic for the node.
    const sentBefore = ctx.proxy.requests.filter((r) => r.path.includes(nodeId) && r.method !== 'GET').length;
    const err = await apply({ raid: { hardwareRAIDVolumes: [{ level: '7' }] } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(400);
    expect((err as ApiError).fields).toEqual([
      { field: 'spec.raid.hardwareRAIDVolumes[0].level', reason: 'unsupported RAID level "7"; accepted: 0, 1, 2, 5, 6, 1+0, 5+0, 6+0' },
    ]);
    expect((await view(name)).spec?.raid).toEqual({ hardwareRAIDVolumes: [{ level: '1', sizeGibibytes: 100, name: 'root' }] });

    // Corrected (no RAID, which this hardware cannot build): the firmware flag is applied and the host is available.
    await waitFor('the corrected spec accepted', async () => Boolean(await apply({ firmware: { virtualizationEnabled: true } }).catch(() => undefined)));
    const fixed = await waitFor('available', idleIn(name, 'available'), { timeoutMs: 180_000 });
    expect(fixed.status.errorCount).toBe(0);
    expect(await biosOf(nodeId)).toMatchObject({ ProcVirtualization: 'Enabled' });
    expect(ctx.proxy.requests.filter((r) => r.path.includes(nodeId) && r.method !== 'GET').length).toBeGreaterThan(sentBefore);
  }, 400_000);

  it('holds a change on a provisioned host, saying why, and applies it once the host is available again', async () => {
    const name = uniq('held');
    const apply = await create(name, { image: IMAGE });
    const provisioned = await waitFor('provisioned', idleIn(name, 'provisioned'), { timeoutMs: 180_000 });
    const nodeId = provisioned.status.provisioning.ID;
    const held = await apply({ image: IMAGE, firmware: { sriovEnabled: true } });
    expect(held.settingsHeld).toMatch(/^spec\.firmware changed while the host is provisioned: applied to a provisioned host only by servicing, which needs a HostUpdatePolicy/);
    expect((await view(name)).operations.some((o) => o.kind === 'clean')).toBe(false);
    expect(await biosOf(nodeId)).toEqual({});

    await apply({ firmware: { sriovEnabled: true } });
    const applied = await waitFor('deprovisioned, the flag applied, available', idleIn(name, 'available', 1), { timeoutMs: 180_000 });
    expect(applied.settingsHeld).toBeUndefined();
    expect(await biosOf(nodeId)).toMatchObject({ SriovGlobalEnable: 'Enabled' });
  }, 400_000);

  it('PUT …/raid sets spec.raid (400 naming the field when invalid, nothing stored), and null clears it', async () => {
    const name = uniq('put-raid');
    await create(name, {});
    await waitFor('available', idleIn(name, 'available'), { timeoutMs: 180_000 });
    const { app, base } = await serveApi(ctx.h.hosts);
    try {
      const path = `/v1/namespaces/${NS}/hosts/${name}/raid`;
      const bad = await callApi(base, 'PUT', path, { softwareRAIDVolumes: [{ level: '5' }] });
      expect(bad.status).toBe(400);
      expect(bad.json.fields).toEqual([{ field: 'spec.raid.softwareRAIDVolumes[0].level', reason: 'unsupported software RAID level "5"; accepted: 0, 1, 1+0' }]);
      expect((await view(name)).spec?.raid).toBeUndefined();
      const set = await callApi(base, 'PUT', path, { softwareRAIDVolumes: [{ level: '1' }] });
      expect(set.status).toBe(202);
      expect(set.json.spec.raid).toEqual({ softwareRAIDVolumes: [{ level: '1' }] });
      // Fake-hardware cannot build it: the host waits in preparing with Ironic's reason until the RAID is cleared.
      await waitFor('the raid step failed', async () => (await view(name)).status.errorMessage.startsWith('clean step raid failed') || undefined, { timeoutMs: 180_000 });
      await waitFor('cleared', async () => (await callApi(base, 'PUT', path, null)).status === 202 || undefined, { timeoutMs: 60_000 });
      const back = await waitFor('available', idleIn(name, 'available'), { timeoutMs: 180_000 });
      expect(back.spec?.raid).toBeNull();
      expect(back.status.errorCount).toBe(0);
    } finally {
      await app.close();
    }
  }, 400_000);

  it("checks BIOS settings against Ironic's BIOS registry before any clean: refused naming the setting, nothing sent", async () => {
    const name = uniq('registry');
    const apply = await create(name, {});
    const nodeId = (await waitFor('available', idleIn(name, 'available'), { timeoutMs: 180_000 })).status.provisioning.ID;
    // A registry given to the node through Ironic itself: the fake bios interface keeps the registry fields it is given.
    const ironic = (method: string, path: string, body?: unknown) =>
      fetch(`${IRONIC_URL}${path}`, { method, headers: { 'x-openstack-ironic-api-version': '1.81', 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const registry = [
      { name: 'ProcVirtualization', value: 'Enabled', attribute_type: 'Enumeration', allowable_values: ['Enabled'] },
      { name: 'SriovGlobalEnable', value: 'Disabled', attribute_type: 'Enumeration', allowable_values: ['Enabled', 'Disabled'], read_only: true },
    ];
    expect((await ironic('PUT', `/v1/nodes/${nodeId}/states/provision`, { target: 'clean', clean_steps: [{ interface: 'bios', step: 'apply_configuration', args: { settings: registry } }] })).status).toBe(202);
    await waitFor('the registry stored', async () => (await biosOf(nodeId)).SriovGlobalEnable === 'Disabled' || undefined, { timeoutMs: 60_000 });
    await waitFor('the node manageable', async () => ((await (await ironic('GET', `/v1/nodes/${nodeId}?fields=provision_state`)).json()) as { provision_state: string }).provision_state === 'manageable' || undefined, { timeoutMs: 60_000 });

    const verbs = verbsTo(nodeId);
    const before = verbs();
    await apply({ firmware: { virtualizationEnabled: false, sriovEnabled: true } });
    const refused = await waitFor('refused', async () => ((await view(name)).status.errorCount >= 1 ? view(name) : undefined), { timeoutMs: 180_000 });
    expect(refused.status.errorType).toBe('preparation error');
    expect(refused.status.errorMessage).toContain('settings.ProcVirtualization: "Disabled" is not allowed; accepted: Enabled');
    expect(refused.status.errorMessage).toContain('settings.SriovGlobalEnable: is read-only in the BIOS registry; remove it');
    expect(verbs()).toBe(before);

    // Corrected to what the registry allows (and the BIOS already has): skipped, no verb, available.
    await waitFor('the corrected spec accepted', async () => Boolean(await apply({ firmware: { virtualizationEnabled: true } }).catch(() => undefined)));
    const fixed = await waitFor('available', async () => {
      const v = await idleIn(name, 'available')();
      return v && v.status.errorCount === 0 ? v : undefined;
    }, { timeoutMs: 180_000 });
    expect(fixed.operations.filter((o) => o.kind === 'clean').at(-1)).toMatchObject({ outcome: 'succeeded', note: 'clean steps: bios skipped (the BIOS already has these settings)' });
    expect(verbs()).toBe(before);
  }, 400_000);
});
