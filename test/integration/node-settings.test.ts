/**
 * The spec's node settings reach Ironic before each step that depends on
 * them, also while a failed step waits to retry (as BMO pushes them on every
 * reconcile), on the real dev server and the real Ironic. A fake-hardware
 * node switched to the `direct` deploy cleans with an agent that never comes
 * (`clean wait`); the test aborts that clean, and Ironic records `clean
 * failed`. The host's provisioning fails in automated cleaning, it
 * deprovisions to try again, and that deprovisioning cleans (and fails) again:
 * until `automatedCleaningMode: disabled` reaches the node, after which the
 * deprovisioning no longer cleans and the host is provisioned.
 */
import { describe, expect, it } from 'vitest';
import type { HostSpec } from '../../model/host';
import type { HostView } from '../../contracts/host';
import { FAST_HOST_OPTIONS, randomMac, uniq, waitFor } from '../support/harness';
import { useProxiedHarness } from '../support/proxied-harness';
import { operationEvents, operationLocalActivities } from '../support/operation-history';
import { defaultPayloadConverter } from '@temporalio/common';
import { DISABLE_POWER_OFF_MICROVERSION } from '../../clients/ironic/microversions';

const NS = 'node-settings';
const IMAGE = { url: 'http://127.0.0.1/node-settings.qcow2', checksum: 'd'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };
const ctx = useProxiedHarness({ hostOptions: FAST_HOST_OPTIONS });

type Ref = { namespace: string; name: string };
const view = async (ref: Ref): Promise<HostView> => (await ctx.h.hosts.get(ref)) as HostView;
const kinds = (v: HostView): string[] => v.operations.map((o) => `${o.kind}:${o.outcome}`);

/** A new fake-hardware host, created and waited for until available. */
async function availableHost(prefix: string): Promise<{ ref: Ref; spec: HostSpec; ready: HostView }> {
  const ref = { namespace: NS, name: uniq(prefix) };
  const spec: HostSpec = { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true };
  await ctx.h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
  const ready = await waitFor('available', async () => {
    const v = await view(ref);
    return v.status.provisioning.state === 'available' && !v.currentOperation ? v : undefined;
  }, { timeoutMs: 180_000 });
  return { ref, spec, ready };
}

describe('node settings applied before each step', { timeout: 600_000 }, () => {
  it('a host whose provisioning fails in automated cleaning recovers once automatedCleaningMode: disabled is set', async () => {
    const { ref, spec, ready } = await availableHost('clean-fails');
    const nodeId = ready.status.provisioning.ID;
    // Cleaning now waits for an agent that never comes.
    await ctx.h.ironic.patchNode(nodeId, [{ op: 'replace', path: '/deploy_interface', value: 'direct' }]);
    await ctx.h.hosts.setImage(ref, IMAGE);

    const cleanWait = () => waitFor('the node cleaning, waiting for its agent', async () => (await ctx.h.ironic.getNode(nodeId))?.provision_state === 'clean wait', { timeoutMs: 120_000 });
    await cleanWait();
    await ctx.h.ironic.abortProvisioning(nodeId);
    const failed = await waitFor('the provisioning failed in cleaning', async () => {
      const v = await view(ref);
      return v.status.errorType === 'provisioning error' ? v : undefined;
    }, { timeoutMs: 120_000 });
    expect(failed.status.errorMessage).toMatch(/clean/);
    expect((await ctx.h.ironic.getNode(nodeId))?.automated_clean).toBe(true);

    // What the host's own error message recommends.
    await ctx.h.hosts.put(ref, { spec: { ...spec, image: IMAGE, automatedCleaningMode: 'disabled' } });
    // A deprovisioning that started before the change may still clean once (it is not interrupted): aborted too.
    // After that, no attempt cleans again: the deprovisioning ends without a clean and the host provisions.
    let cleansAfterChange = 0;
    const recovered = await waitFor('the host provisioned', async () => {
      const node = await ctx.h.ironic.getNode(nodeId);
      if (node?.provision_state === 'clean wait') {
        cleansAfterChange += 1;
        if (cleansAfterChange > 1) throw new Error('the node cleaned again after automatedCleaningMode: disabled was set');
        await ctx.h.ironic.abortProvisioning(nodeId);
        return undefined;
      }
      const v = await view(ref);
      return v.status.provisioning.state === 'provisioned' && !v.currentOperation ? { v, node } : undefined;
    }, { timeoutMs: 240_000, intervalMs: 200 });
    expect(cleansAfterChange).toBeLessThanOrEqual(1);
    expect(recovered.node?.provision_state).toBe('active');
    expect(recovered.node?.automated_clean).toBe(false);
    expect(kinds(recovered.v)).toContain('deprovision:succeeded');
    expect(recovered.v.status.errorCount).toBe(0);

    await ctx.h.hosts.remove(ref);
    await waitFor('the host deleted', async () => (await ctx.h.ironic.getNode(nodeId)) === undefined, { timeoutMs: 240_000 });
  });
  it("the check is the step's own first read, no activity of its own: a slow answer only delays the step", async () => {
    const { ref, ready } = await availableHost('slow-check');
    // The check reads the whole node at the microversion that shows disable_power_off (no other read of a node asks
    // for it): before the step did it, an answer this slow outlasted the local activity's limit and cost an activity.
    const nodeId = ready.status.provisioning.ID;
    ctx.proxy.hold((r) => r.method === 'GET' && r.path === `/v1/nodes/${nodeId}` && r.microversion === DISABLE_POWER_OFF_MICROVERSION, 5_000);
    await ctx.h.hosts.setImage(ref, IMAGE);
    const done = await waitFor('provisioned', async () => {
      const v = await view(ref);
      return v.status.provisioning.state === 'provisioned' && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 180_000 });
    const provision = [...done.operations].reverse().find((o) => o.kind === 'provision')!;
    expect(provision.outcome).toBe('succeeded');
    expect(await operationLocalActivities(ctx.h.client, ref, provision)).toEqual([]);
    const activities = (await operationEvents(ctx.h.client, ref, provision))
      .map((e) => e.activityTaskScheduledEventAttributes && e.userMetadata?.summary)
      .filter((x) => x)
      .map((x) => String(defaultPayloadConverter.fromPayload(x!)));
    expect(activities[0]).toBe(`${provision.seq}-provision: deployNode`);
    expect(activities.filter((a) => a.endsWith('syncNodeSettings'))).toEqual([]);
    await ctx.h.hosts.remove(ref);
    await waitFor('the host deleted', async () => (await ctx.h.ironic.getNode(nodeId)) === undefined, { timeoutMs: 240_000 });
  });
  it('inspectionMode: disabled on a host stuck in inspecting moves it on: no inspection after it, no error, available', async () => {
    const ref = { namespace: NS, name: uniq('inspecting') };
    const spec: HostSpec = { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: false };
    // The first inspect verb is held at the proxy while the test gives the node an inspect interface
    // fake-hardware cannot run: every inspection then fails, and the host retries it for ever.
    let nodeId: string | undefined;
    const inspectVerb = /^\/v1\/nodes\/([^/]+)\/states\/provision$/;
    ctx.proxy.hold((r) => {
      const m = inspectVerb.exec(r.path);
      if (nodeId || r.method !== 'PUT' || !m || !r.body.includes('"inspect"')) return false;
      nodeId = m[1];
      return true;
    }, 5_000);
    await ctx.h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
    const held = await waitFor('the inspect verb sent', async () => nodeId);
    await ctx.h.ironic.patchNode(held, [{ op: 'add', path: '/inspect_interface', value: 'agent' }]);
    const stuck = await waitFor('inspection failing again and again', async () => {
      const v = await view(ref);
      return v.status.provisioning.state === 'inspecting' && v.operations.filter((o) => o.kind === 'inspect' && o.outcome === 'failed').length >= 2 ? v : undefined;
    }, { timeoutMs: 120_000 });
    expect(stuck.status.errorType).toBe('inspection error');

    const changedAt = Date.now();
    await ctx.h.hosts.put(ref, { spec: { ...spec, inspectionMode: 'disabled' } });
    const done = await waitFor('available', async () => {
      const v = await view(ref);
      return v.status.provisioning.state === 'available' && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 180_000 });
    // An attempt under way when the spec changed is cancelled; none starts after it, none fails after it.
    const later = done.operations.filter((o) => Date.parse(o.endedAt ?? o.startedAt) > changedAt);
    expect(later.filter((o) => o.kind === 'inspect' && o.outcome !== 'cancelled')).toEqual([]);
    expect(later.filter((o) => o.outcome === 'failed')).toEqual([]);
    expect(later.map((o) => o.kind)).toContain('prepare');
    expect(done.status.errorCount).toBe(0);
    expect(done.status.errorType).toBe('');
    expect((await ctx.h.ironic.getNode(held))?.provision_state).toBe('manageable');
    await ctx.h.hosts.remove(ref);
  });
});
