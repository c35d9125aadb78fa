/**
 * Manual cleaning (`POST …/clean`), on the real dev server and the real
 * Ironic (through the recording proxy, to count what reaches it). What a
 * clean did is read from Ironic's own records (the node's BIOS settings, its
 * target_raid_config, its history), not from metalflow's view.
 *
 * fake-hardware in this Ironic (39.0) has real clean steps only on its `fake`
 * bios interface: its fake RAID interface has no clean step and its fake
 * deploy interface no erase step, so Ironic fails those steps itself
 * ("node does not support this clean step"): that is the forced `clean failed`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostSpec } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import type { CleanRequest } from '../../model/clean';
import { hostViewQuery, type HostView } from '../../contracts/host';
import type { hostWorkflow } from '../../workflows/host/host';
import { ApiError } from '../../api/host-service';
import { IRONIC_URL } from '../support/env';
import { randomMac, uniq, waitFor } from '../support/harness';
import { useProxiedHarness } from '../support/proxied-harness';
import { callApi, serveApi, writeTokenFile } from '../support/api-client';
import { operationEvents, operationLocalActivities } from '../support/operation-history';
import { defaultPayloadConverter } from '@temporalio/common';

const ctx = useProxiedHarness();
const NS = 'clean';
const ref = (name: string) => ({ namespace: NS, name });
const spec = (name: string, over: Partial<HostSpec> = {}): HostSpec => ({
  bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` },
  bootMACAddress: randomMac(),
  online: true,
  ...over,
});
const view = (name: string): Promise<HostView> =>
  ctx.h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref(name))).query(hostViewQuery);

const idle = (state: string) => async (v: HostView) => (v.status.provisioning.state === state && v.currentOperation === undefined && !v.cleanRequest ? v : undefined);

const created: string[] = [];
// Registered after the harness's own: runs first (hooks run in reverse), while its worker still runs.
afterAll(async () => {
  for (const name of created) await ctx.h.hosts.remove(ref(name)).catch(() => undefined);
  await Promise.all(created.map((name) => ctx.h.client.workflow.getHandle(hostWorkflowId(ref(name))).result().catch(() => undefined)));
}, 180_000);

async function available(name: string): Promise<string> {
  created.push(name);
  await ctx.h.hosts.put(ref(name), { spec: spec(name), credentials: { username: 'admin', password: 'pw' } });
  const v = await waitFor(`${name} available`, async () => idle('available')(await view(name)), { timeoutMs: 120_000 });
  return v.status.provisioning.ID;
}

type Fresh = { name: string; nodeId: string };
const registered = (prefix: string): Promise<Fresh> => {
  const name = uniq(prefix);
  return available(name).then((nodeId) => ({ name, nodeId }));
};
/** Each test's host, registered together as the file starts (one after another they cost a registration each in wall time). */
const prepared = new Map<string, Promise<Fresh>>();
beforeAll(() => {
  for (const prefix of ['bios', 'invalid', 'raid', 'provisioned', 'withdrawn', 'paused']) {
    const host = registered(prefix);
    host.catch(() => undefined); // awaited by its test, which reports the failure
    prepared.set(prefix, host);
  }
});
/** A fresh available host: the one registered for this test, or a new one when the test runs again (a retry). */
function freshHost(prefix: string): Promise<Fresh> {
  const host = prepared.get(prefix);
  prepared.delete(prefix);
  return host ?? registered(prefix);
}

/** Ironic's own records of a node, read straight from Ironic (not through the proxy). */
async function ironicGet<T>(path: string): Promise<T> {
  const res = await fetch(`${IRONIC_URL}${path}`, { headers: { 'x-openstack-ironic-api-version': '1.81' } });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return (await res.json()) as T;
}
const biosOf = async (nodeId: string): Promise<Record<string, string | null>> =>
  Object.fromEntries((await ironicGet<{ bios: { name: string; value: string | null }[] }>(`/v1/nodes/${nodeId}/bios`)).bios.map((b) => [b.name, b.value]));
const historyOf = async (nodeId: string): Promise<string[]> =>
  (await ironicGet<{ history: { event: string }[] }>(`/v1/nodes/${nodeId}/history`)).history.map((e) => e.event);

const rejection = async (p: Promise<unknown>): Promise<ApiError> => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
};

const BIOS: CleanRequest = {
  steps: [{ name: 'bios', firmware: { virtualizationEnabled: true, sriovEnabled: false }, settings: { BootMode: 'Uefi' } }],
};

describe('manual cleaning', () => {
  it('runs a bios step as an Ironic manual clean while the host is preparing, then makes it available again', async () => {
    const { name, nodeId } = await freshHost('bios');
    const accepted = await ctx.h.hosts.clean(ref(name), BIOS);
    expect(accepted.cleanRequest?.request.steps.map((s) => s.name)).toEqual(['bios']);
    const done = await waitFor('the clean done and the host available', async () => idle('available')(await view(name)), { timeoutMs: 120_000 });

    // Ironic applied the settings (Metal3's firmware flags by their BIOS names, and one by name).
    expect(await biosOf(nodeId)).toMatchObject({ ProcVirtualization: 'Enabled', SriovGlobalEnable: 'Disabled', BootMode: 'Uefi' });
    expect((await historyOf(nodeId)).some((e) => e.startsWith("Starting manual cleaning with steps=[{'interface': 'bios', 'step': 'apply_configuration'"))).toBe(true);

    const clean = done.operations.filter((o) => o.kind === 'clean');
    expect(clean).toHaveLength(1);
    expect(clean[0]).toMatchObject({ state: 'preparing', outcome: 'succeeded', steps: ['bios'], step: 'bios', inline: true });
    const after = done.operations.slice(done.operations.indexOf(clean[0]!) + 1);
    expect(after.map((o) => [o.kind, o.outcome])).toEqual([['prepare', 'succeeded']]);
    // The step is its own activity in the UI: `<seq>-clean: cleanNode bios`, after the node's settings were checked
    // by a local activity (one marker in history, where an activity cost three events and a workflow task).
    const summaries = (await operationEvents(ctx.h.client, ref(name), clean[0]!))
      .map((e) => e.activityTaskScheduledEventAttributes && e.userMetadata?.summary)
      .filter((s) => s)
      .map((s) => String(defaultPayloadConverter.fromPayload(s!)));
    expect(summaries).toEqual([`${clean[0]!.seq}-clean: cleanNode bios`]);
    expect(await operationLocalActivities(ctx.h.client, ref(name), clean[0]!)).toEqual([`${clean[0]!.seq}-clean: syncNodeSettings`]);

    // The same settings again: Ironic already reports them, so no clean and no verb at all (no reboot).
    const verbs = () => ctx.proxy.count((r) => r.method === 'PUT' && r.path === `/v1/nodes/${nodeId}/states/provision`);
    const sentBefore = verbs();
    const cleansBefore = (await historyOf(nodeId)).filter((e) => e.startsWith('Starting manual cleaning')).length;
    await ctx.h.hosts.clean(ref(name), BIOS);
    const again = await waitFor('the second clean done', async () => {
      const v = await idle('available')(await view(name));
      return v && v.operations.filter((o) => o.kind === 'clean').length === 2 ? v : undefined;
    }, { timeoutMs: 120_000 });
    expect(again.operations.filter((o) => o.kind === 'clean').at(-1)).toMatchObject({ outcome: 'succeeded', note: 'clean steps: bios skipped (the BIOS already has these settings)' });
    expect(verbs()).toBe(sentBefore);
    expect((await historyOf(nodeId)).filter((e) => e.startsWith('Starting manual cleaning')).length).toBe(cleansBefore);
  }, 240_000);

  it('refuses invalid steps with field-named errors, and nothing reaches Ironic', async () => {
    const { name, nodeId } = await freshHost('invalid');
    const sent = () => ctx.proxy.requests.filter((r) => r.path.includes(nodeId)).length;
    const before = sent();
    const cases: [unknown, string, RegExp][] = [
      [{ steps: [{ name: 'shred' }] }, 'steps[0].name', /unknown clean step "shred"; accepted: erase-metadata, erase-full, raid, bios/],
      [{ steps: [{ name: 'raid', raid: { hardwareRAIDVolumes: [{ level: '7' }] } }] }, 'steps[0].raid.hardwareRAIDVolumes[0].level', /accepted: 0, 1, 2, 5, 6, 1\+0, 5\+0, 6\+0/],
      [{ steps: [{ name: 'bios', firmware: { turbo: true } }] }, 'steps[0].firmware.turbo', /accepted: simultaneousMultithreadingEnabled, sriovEnabled, virtualizationEnabled/],
      [{ steps: [] }, 'steps', /1 to 8 steps/],
    ];
    for (const [body, field, reason] of cases) {
      const err = await rejection(ctx.h.hosts.clean(ref(name), body as CleanRequest));
      expect(err.status).toBe(400);
      expect(err.fields).toEqual(expect.arrayContaining([expect.objectContaining({ field, reason: expect.stringMatching(reason) })]));
    }
    // The HTTP route checks the body itself, with the same field names.
    const { app, base } = await serveApi(ctx.h.hosts);
    try {
      const res = await callApi(base, 'POST', `/v1/namespaces/${NS}/hosts/${name}/clean`, { steps: [{ name: 'raid', raid: { softwareRAIDVolumes: [{ level: '5' }] } }], force: true });
      expect(res.status).toBe(400);
      expect(res.json.error).toBe('InvalidRequest');
      expect(res.json.fields).toEqual([
        { field: 'force', reason: 'unknown field; accepted: steps' },
        { field: 'steps[0].raid.softwareRAIDVolumes[0].level', reason: 'unsupported software RAID level "5"; accepted: 0, 1, 1+0' },
      ]);
    } finally {
      await app.close();
    }
    // It may erase disks: an operator may withdraw a clean but not ask for one.
    const { file, tokens } = writeTokenFile([['op', `operator:${NS}`]]);
    const served = await serveApi(ctx.h.hosts, { env: { METALFLOW_API_TOKENS_FILE: file } });
    try {
      const path = `/v1/namespaces/${NS}/hosts/${name}/clean`;
      expect((await callApi(served.base, 'POST', path, { steps: [{ name: 'erase-metadata' }] }, { token: tokens.op })).status).toBe(403);
      expect((await callApi(served.base, 'DELETE', path, undefined, { token: tokens.op })).status).toBe(200);
    } finally {
      await served.app.close();
    }
    const v = await view(name);
    expect(v.cleanRequest).toBeUndefined();
    expect(v.operations.some((o) => o.kind === 'clean')).toBe(false);
    // Nothing was sent for this node after it became available (no power check is due: fast options have none shorter).
    expect(sent()).toBe(before);
  }, 240_000);

  it("records Ironic's clean failed as a preparation error naming the step, retries it, and is fixed by a corrected request", async () => {
    const { name, nodeId } = await freshHost('raid');
    await ctx.h.hosts.clean(ref(name), {
      steps: [{ name: 'raid', raid: { hardwareRAIDVolumes: [{ level: '1', sizeGibibytes: 100, name: 'root', rotational: false }] } }, BIOS.steps[0]!],
    });
    const failed = await waitFor('the raid step failed twice', async () => {
      const v = await view(name);
      return v.status.errorCount >= 2 ? v : undefined;
    }, { timeoutMs: 120_000 });
    expect(failed.status.provisioning.state).toBe('preparing');
    expect(failed.status.errorType).toBe('preparation error');
    expect(failed.status.errorMessage).toMatch(/clean step raid failed: .*node does not support this clean step: \{'interface': 'raid', 'step': 'delete_configuration'/);
    expect(failed.status.errorMessage).not.toContain('pw');
    const attempts = failed.operations.filter((o) => o.kind === 'clean');
    expect(attempts.every((o) => o.outcome !== 'succeeded' && (o.outcome === 'running' || o.step === 'raid'))).toBe(true);
    // Ironic holds the layout metalflow asked for, Metal3's volume in its words.
    const node = await ironicGet<{ target_raid_config: unknown; raid_config: unknown }>(`/v1/nodes/${nodeId}?fields=target_raid_config,raid_config`);
    expect(node.target_raid_config).toEqual({ logical_disks: [{ size_gb: 100, raid_level: '1', is_root_volume: true, volume_name: 'root', disk_type: 'ssd' }] });
    expect(node.raid_config).toEqual({});
    // The bios step never ran: the raid step before it failed.
    expect(await biosOf(nodeId)).toEqual({});

    // Corrected while it waits to retry: the new request replaces the failed one.
    // Accepted between two attempts (refused, 409, while one runs): asked again until it is.
    await waitFor('the corrected request accepted', async () => Boolean(await ctx.h.hosts.clean(ref(name), BIOS)));
    const fixed = await waitFor('the host available', async () => idle('available')(await view(name)), { timeoutMs: 120_000 });
    expect(fixed.status.errorType).toBe('');
    expect(fixed.status.errorCount).toBe(0);
    expect(await biosOf(nodeId)).toMatchObject({ ProcVirtualization: 'Enabled' });
  }, 240_000);

  it('refuses to clean a provisioned host, and a withdrawn clean leaves the host available without an error', async () => {
    const { name } = await freshHost('provisioned');
    await ctx.h.hosts.setImage(ref(name), { url: 'http://127.0.0.1/img.qcow2', checksum: 'c'.repeat(32), checksumType: 'md5', format: 'qcow2' });
    await waitFor('provisioned', async () => idle('provisioned')(await view(name)), { timeoutMs: 120_000 });
    const err = await rejection(ctx.h.hosts.clean(ref(name), { steps: [{ name: 'erase-metadata' }] }));
    expect(err.status).toBe(409);
    expect(err.message).toMatch(/erase-metadata erases the host's disks: a clean runs only on an available host, and the host is provisioned; deprovision it first/);

    // Back to available; an erase step (no such step on fake-hardware) fails, and the request is withdrawn.
    await ctx.h.hosts.setImage(ref(name), null);
    await waitFor('available again', async () => idle('available')(await view(name)), { timeoutMs: 120_000 });
    await ctx.h.hosts.clean(ref(name), { steps: [{ name: 'erase-metadata' }] });
    const failed = await waitFor('the erase step failed', async () => {
      const v = await view(name);
      return v.status.errorCount >= 1 ? v : undefined;
    }, { timeoutMs: 120_000 });
    expect(failed.status.errorMessage).toMatch(/clean step erase-metadata failed: .*'step': 'erase_devices_metadata'/);
    await ctx.h.hosts.clean(ref(name), null);
    const back = await waitFor('available after the withdrawal', async () => idle('available')(await view(name)), { timeoutMs: 120_000 });
    expect(back.status.errorType).toBe('');
    expect(back.operations.at(-1)).toMatchObject({ kind: 'prepare', outcome: 'succeeded' });
  }, 300_000);

  it('a clean withdrawn while its step runs is cancelled, not failed; the steps after it never reach Ironic', async () => {
    const { name, nodeId } = await freshHost('withdrawn');
    // The bios step's clean verb is held at the proxy, so the clean is surely running when it is withdrawn.
    let held = false;
    const isCleanVerb = (r: { method: string; path: string; body: string }) => r.method === 'PUT' && r.path === `/v1/nodes/${nodeId}/states/provision` && r.body.includes('"clean"');
    ctx.proxy.hold((r) => !held && isCleanVerb(r) && (held = true), 15_000);
    await ctx.h.hosts.clean(ref(name), { steps: [BIOS.steps[0]!, { name: 'erase-metadata' }] });
    await waitFor('the bios step sent', async () => held || undefined);
    const running = await view(name);
    expect(running.status.provisioning.state).toBe('preparing');
    expect(running.currentOperation).toMatchObject({ kind: 'clean', steps: ['bios', 'erase-metadata'], step: 'bios' });

    await ctx.h.hosts.clean(ref(name), null);
    const back = await waitFor('available after the withdrawal', async () => idle('available')(await view(name)), { timeoutMs: 120_000 });
    const clean = back.operations.find((o) => o.kind === 'clean');
    expect(clean).toMatchObject({ outcome: 'cancelled', cancelReason: 'the clean request was withdrawn', step: 'bios' });
    expect(back.status.errorType).toBe('');
    expect(back.status.errorCount).toBe(0);
    expect(ctx.proxy.count(isCleanVerb)).toBe(1);
    expect((await historyOf(nodeId)).some((e) => e.includes('erase_devices_metadata'))).toBe(false);
  }, 240_000);

  it('a pause cancels a running clean without an error, and the request runs again once resumed', async () => {
    const { name, nodeId } = await freshHost('paused');
    let held = false;
    ctx.proxy.hold((r) => !held && r.method === 'PUT' && r.path === `/v1/nodes/${nodeId}/states/provision` && r.body.includes('"clean"') && (held = true), 15_000);
    await ctx.h.hosts.clean(ref(name), BIOS);
    await waitFor('the bios step sent', async () => held || undefined);
    await ctx.h.hosts.setPaused(ref(name), true, 'maintenance window 7');
    const paused = await waitFor('paused and idle', async () => {
      const v = await view(name);
      return v.currentOperation === undefined ? v : undefined;
    }, { timeoutMs: 120_000 });
    expect(paused.operations.find((o) => o.kind === 'clean')).toMatchObject({ outcome: 'cancelled', cancelReason: 'the host was paused (maintenance window 7)' });
    expect(paused.cleanRequest).toBeDefined();
    await ctx.h.hosts.setPaused(ref(name), false);
    const done = await waitFor('available once resumed', async () => idle('available')(await view(name)), { timeoutMs: 120_000 });
    expect(done.operations.filter((o) => o.kind === 'clean').map((o) => o.outcome)).toEqual(['cancelled', 'succeeded']);
    expect(done.status.errorCount).toBe(0);
    expect(await biosOf(nodeId)).toMatchObject({ ProcVirtualization: 'Enabled' });
  }, 240_000);
});
