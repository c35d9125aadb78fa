/**
 * Servicing a provisioned host (Ironic's `service` verb) under Metal3's HostUpdatePolicy, on the
 * real dev server and the real Ironic (through the recording proxy, to count what reaches it).
 * On Ironic 39, fake-hardware's fake bios and firmware interfaces run as service steps (the bios
 * settings are stored and read back); a node given the `no-bios` interface before it is deployed
 * has no BIOS, so Ironic fails the `bios` service itself (`service failed`, with maintenance):
 * the failure path, recorded with Ironic's reason, the node active again.
 */
import { describe, expect, it } from 'vitest';
import type { HostSpec } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, setUpdatePolicyUpdate, type HostView } from '../../contracts/host';
import type { hostWorkflow } from '../../workflows/host/host';
import { ApiError } from '../../api/host-service';
import type { RecordedRequest } from '../../bench/support/ironic-proxy';
import { IRONIC_URL } from '../support/env';
import { randomMac, uniq, waitFor } from '../support/harness';
import { hostsRemovedAfterAll, useProxiedHarness } from '../support/proxied-harness';
import { callApi, serveApi } from '../support/api-client';

const ctx = useProxiedHarness();
const NS = 'servicing';
const ref = (name: string) => ({ namespace: NS, name });
const view = (name: string): Promise<HostView> => ctx.h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref(name))).query(hostViewQuery);
const IMAGE = { url: 'http://127.0.0.1/img.qcow2', checksum: 'c'.repeat(32), checksumType: 'md5' as const, format: 'qcow2' as const };

const created = hostsRemovedAfterAll(ctx, NS);

async function provisioned(name: string, beforeDeploy?: (nodeId: string) => Promise<void>): Promise<{ nodeId: string; apply: (o: Partial<HostSpec>) => Promise<HostView> }> {
  created.push(name);
  const mac = randomMac();
  const spec = (o: Partial<HostSpec>): HostSpec => ({ bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` }, bootMACAddress: mac, online: true, ...o });
  const idle = (state: string) => async () => {
    const x = await view(name);
    return x.status.provisioning.state === state && !x.currentOperation ? x : undefined;
  };
  await ctx.h.hosts.put(ref(name), { spec: spec({}), credentials: { username: 'admin', password: 'pw' } });
  const available = await waitFor('available', idle('available'), { timeoutMs: 180_000 });
  await beforeDeploy?.(available.status.provisioning.ID);
  await ctx.h.hosts.put(ref(name), { spec: spec({ image: IMAGE }) });
  const v = await waitFor('provisioned', idle('provisioned'), { timeoutMs: 180_000 });
  return { nodeId: v.status.provisioning.ID, apply: async (o) => (await ctx.h.hosts.put(ref(name), { spec: spec({ image: IMAGE, ...o }) })).view };
}

const ironic = (path: string, init: RequestInit = {}): Promise<Response> =>
  fetch(`${IRONIC_URL}${path}`, { ...init, headers: { 'x-openstack-ironic-api-version': '1.87', 'content-type': 'application/json' } });
/** A BMC without BIOS settings: Ironic's no-bios interface (set while the node is manageable; an active node's interfaces are fixed). */
const withoutBios = async (nodeId: string): Promise<void> => {
  const res = await ironic(`/v1/nodes/${nodeId}`, { method: 'PATCH', body: JSON.stringify([{ op: 'replace', path: '/bios_interface', value: 'no-bios' }]) });
  expect(res.status).toBe(200);
};
const biosOf = async (nodeId: string): Promise<Record<string, string | null>> => {
  const { bios } = (await (await ironic(`/v1/nodes/${nodeId}/bios`)).json()) as { bios: { name: string; value: string | null }[] };
  return Object.fromEntries(bios.map((b) => [b.name, b.value]));
};

const refusal = (p: Promise<unknown>): Promise<ApiError> =>
  p.then(
    () => {
      throw new Error('accepted');
    },
    (e: unknown) => e as ApiError,
  );
const target = (r: RecordedRequest): string | undefined => (JSON.parse(r.body || '{}') as { target?: string }).target;
const verbs = (nodeId: string, verb: string) => (r: RecordedRequest) => r.method === 'PUT' && r.path === `/v1/nodes/${nodeId}/states/provision` && target(r) === verb;
const nodeState = async (nodeId: string): Promise<{ provision_state: string; maintenance: boolean }> =>
  (await (await ironic(`/v1/nodes/${nodeId}?fields=provision_state,maintenance`)).json()) as { provision_state: string; maintenance: boolean };
const bios = { steps: [{ name: 'bios' as const, settings: { ProcVirtualization: 'Enabled' } }] };

describe('servicing a provisioned host under its HostUpdatePolicy', () => {
  it('refuses a clean on a provisioned host without a policy that allows it, saying why; never sends anything', async () => {
    const name = uniq('refused');
    const { nodeId } = await provisioned(name);
    const none = await refusal(ctx.h.hosts.clean(ref(name), bios));
    expect(none.status).toBe(409);
    expect(none.message).toMatch(/the host is provisioned; deprovision it first \(remove the image\), or give it a HostUpdatePolicy that allows servicing/);

    // API mode's resource: PUT/GET/DELETE …/update-policy over HTTP.
    const { app, base } = await serveApi(ctx.h.hosts);
    try {
      const path = `/v1/namespaces/${NS}/hosts/${name}/update-policy`;
      expect((await callApi(base, 'GET', path)).json).toEqual({});
      const bad = await callApi(base, 'PUT', path, { firmwareSettings: 'always' });
      expect(bad.status).toBe(400);
      const put = await callApi(base, 'PUT', path, { firmwareSettings: 'onReboot' });
      expect(put.status).toBe(202);
      expect(put.json.updatePolicy).toEqual({ firmwareSettings: 'onReboot' });
      expect((await callApi(base, 'DELETE', path)).json.updatePolicy).toBeUndefined();
      expect((await callApi(base, 'PUT', path, { firmwareSettings: 'onPreparing' })).status).toBe(202);
      expect((await callApi(base, 'GET', path)).json).toEqual({ firmwareSettings: 'onPreparing' });
    } finally {
      await app.close();
    }
    expect((await view(name)).updatePolicy).toEqual({ firmwareSettings: 'onPreparing' });
    const onPreparing = await refusal(ctx.h.hosts.clean(ref(name), bios));
    expect(onPreparing.message).toMatch(/bios needs the host's HostUpdatePolicy to have firmwareSettings: onReboot \(it has onPreparing\)/);

    await ctx.h.hosts.update(ref(name), setUpdatePolicyUpdate, [{ firmwareSettings: 'onReboot', firmwareUpdates: 'onReboot' }]);
    const erase = await refusal(ctx.h.hosts.clean(ref(name), { steps: [{ name: 'erase-metadata' }, { name: 'bios', settings: { X: 'y' } }] }));
    expect(erase.message).toMatch(/erase-metadata erases the host's disks: never on a provisioned host/);
    const bad = await refusal(ctx.h.hosts.update(ref(name), setUpdatePolicyUpdate, [{ firmwareSettings: 'always' } as never]));
    expect(bad.status).toBe(400);
    expect(bad.message).toMatch(/spec\.firmwareSettings: "always" is not accepted; accepted: onPreparing, onReboot/);
    expect(ctx.proxy.count(verbs(nodeId, 'service'))).toBe(0);
    expect((await view(name)).operations.some((o) => o.kind === 'service')).toBe(false);
  }, 300_000);

  it('services when the policy allows it: service failed is recorded with Ironic\'s reason, the node active and the host provisioned', async () => {
    const name = uniq('svc');
    const { nodeId } = await provisioned(name, withoutBios);
    await ctx.h.hosts.update(ref(name), setUpdatePolicyUpdate, [{ firmwareSettings: 'onReboot' }]);
    await ctx.h.hosts.clean(ref(name), bios);
    const failed = await waitFor('the service to fail', async () => {
      const v = await view(name);
      const op = v.operations.find((o) => o.kind === 'service' && o.outcome === 'failed');
      return op && v.currentOperation === undefined ? { v, op } : undefined;
    }, { timeoutMs: 180_000 });
    expect(failed.op.steps).toEqual(['bios']);
    expect(failed.op.error).toMatch(/^service step bios failed: .*apply_configuration.*; the node is active again$/);
    expect(failed.v.status).toMatchObject({ errorType: 'servicing error', operationalStatus: 'error' });
    expect(failed.v.status.provisioning.state).toBe('provisioned');
    expect(await nodeState(nodeId)).toMatchObject({ provision_state: 'active', maintenance: false });
    expect(ctx.proxy.count(verbs(nodeId, 'service'))).toBeGreaterThanOrEqual(1);
    expect(ctx.proxy.count(verbs(nodeId, 'abort'))).toBeGreaterThanOrEqual(1);
    // Withdrawn: nothing more is sent; the host stays provisioned with its image.
    await ctx.h.hosts.clean(ref(name), null);
    const settled = await waitFor('withdrawn', async () => {
      const v = await view(name);
      return !v.cleanRequest && !v.currentOperation && v.retryAt === undefined ? v : undefined;
    }, { timeoutMs: 60_000 });
    expect(settled.status.provisioning.state).toBe('provisioned');
    expect((await nodeState(nodeId)).provision_state).toBe('active');
  }, 300_000);

  it('holds spec.firmware on a provisioned host until its policy allows servicing, then services it at the next reboot', async () => {
    const name = uniq('held');
    const { nodeId, apply } = await provisioned(name);
    const held = await apply({ firmware: { sriovEnabled: true } });
    expect(held.settingsHeld).toMatch(/^spec\.firmware changed while the host is provisioned: applied to a provisioned host only by servicing, which needs a HostUpdatePolicy with firmwareSettings: onReboot \(the host has none\)/);
    const policy = await ctx.h.hosts.update(ref(name), setUpdatePolicyUpdate, [{ firmwareSettings: 'onReboot' }]);
    expect(policy.settingsHeld).toMatch(/applied by servicing at the host's next reboot \(HostUpdatePolicy firmwareSettings: onReboot\); reboot it to apply now/);
    expect(ctx.proxy.count(verbs(nodeId, 'service'))).toBe(0);

    await ctx.h.hosts.reboot(ref(name));
    const done = await waitFor('serviced, then rebooted', async () => {
      const v = await view(name);
      return !v.currentOperation && v.operations.some((o) => o.kind === 'reboot' && o.outcome === 'succeeded') ? v : undefined;
    }, { timeoutMs: 180_000 });
    const kinds = done.operations.map((o) => o.kind);
    expect(kinds.indexOf('service')).toBeGreaterThan(-1);
    expect(kinds.indexOf('service')).toBeLessThan(kinds.lastIndexOf('reboot'));
    expect(done.operations.find((o) => o.kind === 'service')).toMatchObject({ outcome: 'succeeded', steps: ['bios'], note: 'service steps: bios' });
    expect(ctx.proxy.count(verbs(nodeId, 'service'))).toBe(1);
    expect(await biosOf(nodeId)).toMatchObject({ SriovGlobalEnable: 'Enabled' });
    expect(done.settingsHeld).toBeUndefined();
    expect(done.status).toMatchObject({ operationalStatus: 'OK', errorType: '', provisioning: { state: 'provisioned', firmware: { sriovEnabled: true } } });
    expect(await nodeState(nodeId)).toMatchObject({ provision_state: 'active', maintenance: false });
  }, 400_000);
});
