/**
 * `GET`/`PUT …/hosts/{name}/firmware-settings` in API mode, on the real dev server and the real
 * Ironic (through the recording proxy, to count what reaches it): Ironic's BIOS settings and
 * registry read through the worker, a refused setting a 400 naming it with nothing sent, a
 * valid change applied as the host's bios clean step and read back from Ironic; firmware updates
 * refused the same way, or flashed as the firmware clean step through Ironic's firmware.update
 * (fake-hardware's firmware interface runs it).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import type { hostWorkflow } from '../../workflows/host/host';
import { IRONIC_URL } from '../support/env';
import { randomMac, uniq, waitFor } from '../support/harness';
import { useProxiedHarness } from '../support/proxied-harness';
import { callApi, serveApi } from '../support/api-client';

const ctx = useProxiedHarness();
const NS = 'fw-settings-api';
const ref = (name: string) => ({ namespace: NS, name });
const view = (name: string): Promise<HostView> => ctx.h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref(name))).query(hostViewQuery);
const cleans = (v: HostView) => v.operations.filter((o) => o.kind === 'clean');
const ironic = (method: string, path: string, body?: unknown) =>
  fetch(`${IRONIC_URL}${path}`, { method, headers: { 'x-openstack-ironic-api-version': '1.81', 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
const biosOf = async (nodeId: string): Promise<Record<string, string | null>> => {
  const { bios } = (await (await ironic('GET', `/v1/nodes/${nodeId}/bios`)).json()) as { bios: { name: string; value: string | null }[] };
  return Object.fromEntries(bios.map((b) => [b.name, b.value]));
};
const REGISTRY = [
  { name: 'ProcVirtualization', value: 'Enabled', attribute_type: 'Enumeration', allowable_values: ['Enabled', 'Disabled'] },
  { name: 'SriovGlobalEnable', value: 'Disabled', attribute_type: 'Enumeration', allowable_values: ['Enabled', 'Disabled'], read_only: true },
  { name: 'NumCores', value: '16', attribute_type: 'Integer', lower_bound: 1, upper_bound: 64 },
];

const created: string[] = [];
afterAll(async () => {
  for (const name of created) await ctx.h.hosts.remove(ref(name)).catch(() => undefined);
  await Promise.all(created.map((name) => ctx.h.client.workflow.getHandle(hostWorkflowId(ref(name))).result().catch(() => undefined)));
}, 180_000);

/** A fake-hardware host, available, and how to wait for it to be so again (idle, no clean pending). */
async function availableHost(prefix: string): Promise<{ name: string; idle: () => Promise<HostView | undefined>; first: HostView }> {
  const name = uniq(prefix);
  created.push(name);
  await ctx.h.hosts.put(ref(name), {
    spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` }, bootMACAddress: randomMac(), online: true },
    credentials: { username: 'admin', password: 'pw' },
  });
  const idle = async () => {
    const v = await view(name);
    return v.status.provisioning.state === 'available' && v.currentOperation === undefined && !v.cleanRequest ? v : undefined;
  };
  return { name, idle, first: await waitFor('available', idle, { timeoutMs: 180_000 }) };
}

describe('PUT …/firmware-settings and …/firmware-updates', () => {
  it('reads Ironic, refuses what the registry forbids with nothing sent, applies a valid change as the bios clean step', async () => {
    const { name, idle, first } = await availableHost('fws');
    const nodeId = first.status.provisioning.ID;
    expect((await ironic('PUT', `/v1/nodes/${nodeId}/states/provision`, { target: 'clean', clean_steps: [{ interface: 'bios', step: 'apply_configuration', args: { settings: REGISTRY } }] })).status).toBe(202);
    await waitFor('the registry stored', async () => {
      const node = (await (await ironic('GET', `/v1/nodes/${nodeId}?fields=provision_state`)).json()) as { provision_state: string };
      return node.provision_state === 'manageable' && (await biosOf(nodeId)).NumCores === '16' ? true : undefined;
    }, { timeoutMs: 60_000 });

    const { app, base } = await serveApi(ctx.h.hosts);
    try {
      const path = `/v1/namespaces/${NS}/hosts/${name}/firmware-settings`;
      const shown = await callApi(base, 'GET', path);
      expect(shown.status).toBe(200);
      const body = shown.json as { status: { settings: Record<string, string>; schema: { name: string; schema: Record<string, unknown> }; conditions: { type: string; status: string }[] } };
      expect(body.status.settings).toEqual({ ProcVirtualization: 'Enabled', SriovGlobalEnable: 'Disabled', NumCores: '16' });
      expect(body.status.schema.name).toMatch(/^schema-[0-9a-f]{8}$/);
      expect(body.status.schema.schema.NumCores).toEqual({ attribute_type: 'Integer', lower_bound: 1, upper_bound: 64 });
      expect(body.status.conditions.map((c) => [c.type, c.status])).toEqual([['ChangeDetected', 'False'], ['Valid', 'True']]);

      const verbs = () => ctx.proxy.count((r) => r.method === 'PUT' && r.path === `/v1/nodes/${nodeId}/states/provision`);
      const before = verbs();
      const refused = await callApi(base, 'PUT', path, { settings: { SriovGlobalEnable: 'Enabled', NumCores: 65, Turbo: 'On' } });
      expect(refused.status).toBe(400);
      expect((refused.json as { fields: unknown[] }).fields).toEqual([
        { field: 'spec.settings.Turbo', reason: 'not in status.settings: Ironic reports no such setting for this host' },
        { field: 'spec.settings.SriovGlobalEnable', reason: 'is read-only in the BIOS registry; remove it' },
        { field: 'spec.settings.NumCores', reason: '65 is out of range; accepted: 1 to 64' },
      ]);
      const wrongType = await callApi(base, 'PUT', path, { settings: { NumCores: true } });
      expect(wrongType.status).toBe(400);
      expect(JSON.stringify(wrongType.json)).toContain('settings.NumCores');
      // What Ironic already reports: nothing to do.
      const same = await callApi(base, 'PUT', path, { settings: { NumCores: 16 } });
      expect(same.status).toBe(200);
      expect(same.json).toMatchObject({ applying: false });
      const held = await view(name);
      expect(held.cleanRequest).toBeUndefined();
      expect(verbs()).toBe(before);

      const cleansBefore = cleans(held).length;
      const accepted = await callApi(base, 'PUT', path, { settings: { ProcVirtualization: 'Disabled', NumCores: 8 } });
      expect(accepted.status).toBe(202);
      expect(accepted.json).toMatchObject({ applying: true, cleanRequest: { request: { steps: [{ name: 'bios', settings: { ProcVirtualization: 'Disabled', NumCores: '8' } }] } } });
      const done = await waitFor('applied', async () => {
        const v = await idle();
        return v && cleans(v).length === cleansBefore + 1 ? v : undefined;
      }, { timeoutMs: 180_000 });
      expect(cleans(done).at(-1)).toMatchObject({ outcome: 'succeeded', steps: ['bios'] });
      expect(await biosOf(nodeId)).toMatchObject({ ProcVirtualization: 'Disabled', NumCores: '8' });
      const after = (await callApi(base, 'GET', path)).json as { status: { conditions: { type: string; status: string }[] } };
      expect(after.status.conditions.map((c) => [c.type, c.status])).toEqual([['ChangeDetected', 'False'], ['Valid', 'True']]);
    } finally {
      await app.close();
    }
  }, 400_000);

  it("refuses invalid firmware updates with nothing sent, runs valid ones as Ironic's firmware.update clean step", async () => {
    const { name, idle, first } = await availableHost('fwu');
    const nodeId = first.status.provisioning.ID;
    const { app, base } = await serveApi(ctx.h.hosts);
    try {
      const path = `/v1/namespaces/${NS}/hosts/${name}/firmware-updates`;
      // fake-hardware's firmware interface caches no components: Ironic reports none.
      expect((await callApi(base, 'GET', `/v1/namespaces/${NS}/hosts/${name}/firmware-components`)).json).toEqual({ status: { components: [] } });
      const verbs = () => ctx.proxy.count((r) => r.method === 'PUT' && r.path === `/v1/nodes/${nodeId}/states/provision`);
      const before = verbs();
      const refused = await callApi(base, 'PUT', path, { updates: [{ component: 'nic', url: 'http://127.0.0.1/nic.bin' }, { component: 'bios', url: 'ftp://127.0.0.1/bios.bin' }] });
      expect(refused.status).toBe(400);
      expect((refused.json as { fields: unknown[] }).fields).toEqual([
        { field: 'spec.updates[0].component', reason: 'unknown firmware component "nic"; accepted: bios, bmc' },
        { field: 'spec.updates[1].url', reason: 'must be an http or https URL of at most 2048 characters (the BMC fetches it)' },
      ]);
      expect((await view(name)).cleanRequest).toBeUndefined();
      expect(verbs()).toBe(before);

      const updates = [{ component: 'bios', url: 'http://127.0.0.1/firmware/bios-2.1.0.bin' }, { component: 'bmc', url: 'https://127.0.0.1/firmware/bmc-5.0.1.bin' }];
      const accepted = await callApi(base, 'PUT', path, { updates });
      expect(accepted.status).toBe(202);
      const done = await waitFor('flashed', async () => {
        const v = await idle();
        return v && cleans(v).length === cleans(first).length + 1 ? v : undefined;
      }, { timeoutMs: 180_000 });
      expect(cleans(done).at(-1)).toMatchObject({ outcome: 'succeeded', steps: ['firmware'] });
      // Ironic was asked for its firmware.update clean step with the images, in order.
      const sent = ctx.proxy.requests.filter((r) => r.method === 'PUT' && r.path === `/v1/nodes/${nodeId}/states/provision`).map((r) => JSON.parse(r.body) as { target: string; clean_steps?: unknown });
      expect(sent.filter((b) => b.target === 'clean').at(-1)?.clean_steps).toEqual([{ interface: 'firmware', step: 'update', args: { settings: updates } }]);
    } finally {
      await app.close();
    }
  }, 400_000);
});
