/**
 * `PUT …/firmware-settings` and `…/firmware-updates` on a PROVISIONED host in API mode (patch
 * firmware-servicing), on the real dev server and the real Ironic (through the recording proxy,
 * to count what reaches it): the change is held (202, `settingsHeld` saying why), nothing is sent
 * while the host has no HostUpdatePolicy allowing it (a reboot reboots only), a setting put back
 * withdraws its part, a policy deleted before the reboot leaves it held; with the policy the next reboot services the firmware then bios steps
 * (fake-hardware's firmware and bios interfaces run as service steps) before rebooting, and
 * Ironic reports the new BIOS value. A change still held when the host is deprovisioned is its
 * clean once it is available.
 */
import { describe, expect, it } from 'vitest';
import { hostWorkflowId } from '../../model/host-ref';
import { holdFirmwareChangeUpdate, hostViewQuery, setUpdatePolicyUpdate, type HostView } from '../../contracts/host';
import type { hostWorkflow } from '../../workflows/host/host';
import { ApiError } from '../../api/host-service';
import type { RecordedRequest } from '../../bench/support/ironic-proxy';
import { IRONIC_URL } from '../support/env';
import { randomMac, uniq, waitFor } from '../support/harness';
import { hostsRemovedAfterAll, useProxiedHarness } from '../support/proxied-harness';
import { callApi, serveApi } from '../support/api-client';

const ctx = useProxiedHarness();
const NS = 'fw-servicing-api';
const ref = (name: string) => ({ namespace: NS, name });
const view = (name: string): Promise<HostView> => ctx.h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref(name))).query(hostViewQuery);
const IMAGE = { url: 'http://127.0.0.1/img.qcow2', checksum: 'c'.repeat(32), checksumType: 'md5' as const, format: 'qcow2' as const };
const created = hostsRemovedAfterAll(ctx, NS);

const ironic = (method: string, path: string, body?: unknown) =>
  fetch(`${IRONIC_URL}${path}`, { method, headers: { 'x-openstack-ironic-api-version': '1.87', 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
const biosOf = async (nodeId: string): Promise<Record<string, string | null>> => {
  const { bios } = (await (await ironic('GET', `/v1/nodes/${nodeId}/bios`)).json()) as { bios: { name: string; value: string | null }[] };
  return Object.fromEntries(bios.map((b) => [b.name, b.value]));
};
const target = (r: RecordedRequest): string | undefined => (JSON.parse(r.body || '{}') as { target?: string }).target;
const services = (nodeId: string) => (r: RecordedRequest) => r.method === 'PUT' && r.path === `/v1/nodes/${nodeId}/states/provision` && target(r) === 'service';
const REGISTRY = [
  { name: 'ProcVirtualization', value: 'Enabled', attribute_type: 'Enumeration', allowable_values: ['Enabled', 'Disabled'] },
  { name: 'NumCores', value: '16', attribute_type: 'Integer', lower_bound: 1, upper_bound: 64 },
];
const UPDATES = [{ component: 'bios', url: 'http://127.0.0.1/firmware/bios-2.1.0.bin' }];
const cleanSteps = (nodeId: string) => (r: RecordedRequest) => r.method === 'PUT' && r.path === `/v1/nodes/${nodeId}/states/provision` && target(r) === 'clean';

/**
 * A fake-hardware host given a BIOS registry through Ironic's fake bios interface (while its node is
 * manageable), then provisioned; `whileAvailable` runs before the registry is stored.
 */
async function provisionedHost(prefix: string, whileAvailable?: (name: string) => Promise<void>) {
  const name = uniq(prefix);
  created.push(name);
  const mac = randomMac();
  const spec = (image?: typeof IMAGE) => ({ bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` }, bootMACAddress: mac, online: true, ...(image ? { image } : {}) });
  /** Idle in `state`, with no clean pending. */
  const idle = (state: string) => async () => {
    const v = await view(name);
    return v.status.provisioning.state === state && !v.currentOperation && !v.cleanRequest ? v : undefined;
  };
  await ctx.h.hosts.put(ref(name), { spec: spec(), credentials: { username: 'admin', password: 'pw' } });
  const nodeId = (await waitFor('available', idle('available'), { timeoutMs: 180_000 })).status.provisioning.ID;
  await whileAvailable?.(name);
  expect((await ironic('PUT', `/v1/nodes/${nodeId}/states/provision`, { target: 'clean', clean_steps: [{ interface: 'bios', step: 'apply_configuration', args: { settings: REGISTRY } }] })).status).toBe(202);
  await waitFor('the registry stored', async () => ((await biosOf(nodeId)).NumCores === '16' ? true : undefined), { timeoutMs: 60_000 });
  await waitFor('manageable', async () => (((await (await ironic('GET', `/v1/nodes/${nodeId}?fields=provision_state`)).json()) as { provision_state: string }).provision_state === 'manageable' ? true : undefined), { timeoutMs: 60_000 });
  await ctx.h.hosts.put(ref(name), { spec: spec(IMAGE) });
  await waitFor('provisioned', idle('provisioned'), { timeoutMs: 180_000 });
  return { name, nodeId, spec, idle };
}

describe('firmware changes on a provisioned host in API mode', () => {
  it('holds them with the reason, sends nothing without a policy, services them at the reboot with one', async () => {
    const { name, nodeId } = await provisionedHost('fwsvc', async (name) => {
      // Never held on a host that is not provisioned (an available one takes a clean instead).
      const notProvisioned = await ctx.h.hosts.update(ref(name), holdFirmwareChangeUpdate, [{ steps: [{ name: 'bios', settings: { NumCores: '8' } }] }]).then(
        () => undefined,
        (e: unknown) => e as ApiError,
      );
      expect(notProvisioned?.status).toBe(409);
      expect(notProvisioned?.message).toMatch(/held for servicing only on a provisioned host, and the host is available/);
    });

    const { app, base } = await serveApi(ctx.h.hosts);
    try {
      const settings = `/v1/namespaces/${NS}/hosts/${name}/firmware-settings`;
      const updates = `/v1/namespaces/${NS}/hosts/${name}/firmware-updates`;
      // Refused as on an available host: 400 naming the setting, nothing held.
      const bad = await callApi(base, 'PUT', settings, { settings: { NumCores: 65 } });
      expect(bad.status).toBe(400);
      expect((await view(name)).firmwareHeld).toBeUndefined();

      const held = await callApi(base, 'PUT', settings, { settings: { ProcVirtualization: 'Disabled', NumCores: 16 } });
      expect(held.status).toBe(202);
      expect(held.json).toMatchObject({ applying: false, held: { request: { steps: [{ name: 'bios', settings: { ProcVirtualization: 'Disabled' } }] } } });
      expect(held.json.settingsHeld).toMatch(
        /^HostFirmwareSettings change \(ProcVirtualization\) held while the host is provisioned: needs a HostUpdatePolicy with firmwareSettings: onReboot to be applied by servicing \(the host has none\)/,
      );
      const both = await callApi(base, 'PUT', updates, { updates: UPDATES });
      expect(both.status).toBe(202);
      expect(both.json.held.request.steps.map((s: { name: string }) => s.name)).toEqual(['firmware', 'bios']);
      expect(both.json.settingsHeld).toMatch(/HostFirmwareComponents updates \(bios\) held while the host is provisioned: needs a HostUpdatePolicy with firmwareUpdates: onReboot/);
      const shown = await callApi(base, 'GET', settings);
      expect(shown.json.status.conditions.find((c: { type: string }) => c.type === 'ChangeDetected').status).toBe('True');

      // No policy: the reboot reboots, nothing is serviced.
      await ctx.h.hosts.reboot(ref(name));
      const rebooted = await waitFor('rebooted', async () => {
        const v = await view(name);
        return !v.currentOperation && v.operations.some((o) => o.kind === 'reboot' && o.outcome === 'succeeded') ? v : undefined;
      }, { timeoutMs: 180_000 });
      expect(rebooted.operations.some((o) => o.kind === 'service')).toBe(false);
      expect(ctx.proxy.count(services(nodeId))).toBe(0);
      expect(rebooted.firmwareHeld?.request.steps).toHaveLength(2);
      expect(await biosOf(nodeId)).toMatchObject({ ProcVirtualization: 'Enabled' });

      // Put back to what Ironic reports: that part is withdrawn (200), the updates stay held.
      const back = await callApi(base, 'PUT', settings, { settings: { ProcVirtualization: 'Enabled' } });
      expect(back.status).toBe(200);
      expect(back.json.held.request.steps.map((s: { name: string }) => s.name)).toEqual(['firmware']);
      expect((await callApi(base, 'PUT', settings, { settings: { ProcVirtualization: 'Disabled' } })).status).toBe(202);

      const setPolicy = () => ctx.h.hosts.update(ref(name), setUpdatePolicyUpdate, [{ firmwareSettings: 'onReboot', firmwareUpdates: 'onReboot' }]);
      // A policy deleted before the reboot: the change stays held, with the first reason again.
      await setPolicy();
      const removed = await ctx.h.hosts.update(ref(name), setUpdatePolicyUpdate, [null]);
      expect(removed.firmwareHeld?.request.steps).toHaveLength(2);
      expect(removed.settingsHeld).toMatch(/HostFirmwareSettings change \(ProcVirtualization\) held while the host is provisioned: needs a HostUpdatePolicy with firmwareSettings: onReboot/);
      const policy = await setPolicy();
      expect(policy.settingsHeld).toMatch(/HostFirmwareComponents updates \(bios\) held while the host is provisioned: applied by servicing at the host's next reboot \(HostUpdatePolicy firmwareUpdates: onReboot\)/);
      expect(policy.settingsHeld).toMatch(/HostFirmwareSettings change \(ProcVirtualization\) held while the host is provisioned: applied by servicing at the host's next reboot \(HostUpdatePolicy firmwareSettings: onReboot\); reboot it to apply now/);
      expect(ctx.proxy.count(services(nodeId))).toBe(0);

      await ctx.h.hosts.reboot(ref(name));
      const done = await waitFor('serviced, then rebooted', async () => {
        const v = await view(name);
        return !v.currentOperation && v.operations.filter((o) => o.kind === 'reboot' && o.outcome === 'succeeded').length === 2 ? v : undefined;
      }, { timeoutMs: 240_000 });
      const kinds = done.operations.map((o) => o.kind);
      expect(kinds.filter((k) => k === 'service')).toHaveLength(1);
      expect(kinds.indexOf('service')).toBeLessThan(kinds.lastIndexOf('reboot'));
      expect(done.operations.find((o) => o.kind === 'service')).toMatchObject({ outcome: 'succeeded', steps: ['firmware', 'bios'], note: 'service steps: firmware, bios' });
      // One Ironic service per step.
      expect(ctx.proxy.count(services(nodeId))).toBe(2);
      expect(done.firmwareHeld).toBeUndefined();
      expect(done.settingsHeld).toBeUndefined();
      expect(done.firmwareServiced).toMatchObject({ updates: UPDATES, settings: { ProcVirtualization: 'Disabled' } });
      expect(done.status).toMatchObject({ operationalStatus: 'OK', errorType: '', provisioning: { state: 'provisioned' } });
      expect(await biosOf(nodeId)).toMatchObject({ ProcVirtualization: 'Disabled' });
      const after = await callApi(base, 'GET', settings);
      expect(after.json.status.settings).toMatchObject({ ProcVirtualization: 'Disabled' });
      expect(after.json.status.conditions.find((c: { type: string }) => c.type === 'ChangeDetected').status).toBe('False');
    } finally {
      await app.close();
    }
  }, 600_000);

  // Patch held-firmware-kept: before it, the deprovision dropped the change and the caller had to PUT it again.
  it('a held change is applied as the clean of the available host a deprovision leaves', async () => {
    const { name, nodeId, spec, idle } = await provisionedHost('fwdep');
    const { app, base } = await serveApi(ctx.h.hosts);
    try {
      const settings = `/v1/namespaces/${NS}/hosts/${name}/firmware-settings`;
      expect((await callApi(base, 'PUT', settings, { settings: { ProcVirtualization: 'Disabled' } })).status).toBe(202);
      const held = await callApi(base, 'PUT', `/v1/namespaces/${NS}/hosts/${name}/firmware-updates`, { updates: UPDATES });
      expect(held.status).toBe(202);
      expect(held.json.held.request.steps.map((s: { name: string }) => s.name)).toEqual(['firmware', 'bios']);
      const before = await view(name);
      const cleansBefore = before.operations.filter((o) => o.kind === 'clean').length;
      const sentBefore = ctx.proxy.count(cleanSteps(nodeId));

      // The image removed: deprovisioned, and the held change goes with the host to available.
      await ctx.h.hosts.put(ref(name), { spec: spec() });
      const done = await waitFor('deprovisioned and idle', async () => {
        const v = await idle('available')();
        return v && v.operations.some((o) => o.kind === 'deprovision' && o.outcome === 'succeeded') ? v : undefined;
      }, { timeoutMs: 300_000 });
      const cleans = done.operations.filter((o) => o.kind === 'clean');
      expect(cleans).toHaveLength(cleansBefore + 1);
      expect(cleans.at(-1)).toMatchObject({ outcome: 'succeeded', steps: ['firmware', 'bios'] });
      expect(done.firmwareHeld).toBeUndefined();
      expect(done.settingsHeld).toBeUndefined();
      expect(done.firmwareServiced).toMatchObject({ updates: UPDATES, settings: { ProcVirtualization: 'Disabled' } });
      // One Ironic manual clean per step, the images as firmware.update's settings.
      const sent = ctx.proxy.requests.filter(cleanSteps(nodeId)).slice(sentBefore).map((r) => (JSON.parse(r.body) as { clean_steps: unknown }).clean_steps);
      expect(sent).toEqual([
        [{ interface: 'firmware', step: 'update', args: { settings: UPDATES } }],
        [{ interface: 'bios', step: 'apply_configuration', args: { settings: [{ name: 'ProcVirtualization', value: 'Disabled' }] } }],
      ]);
      expect(await biosOf(nodeId)).toMatchObject({ ProcVirtualization: 'Disabled' });
    } finally {
      await app.close();
    }
  }, 600_000);
});
