/**
 * A remediation's opt-in steps beyond Metal3, in API mode, end to end (the
 * test stack's Temporal and Ironic, fake-hardware): once the reboots have
 * not brought the host back, re-provision the same image through the host
 * workflow (patch remediation-reprovision). The reboots are made to fail by
 * a timeout shorter than any power change (a workflow started without the
 * API takes it), so the step after them runs. If re-provisioning fails too
 * (patch remediation-reinspect), the host is re-inspected and the failure
 * names what changed: the fake-hardware node's inventory (Ironic's
 * properties, which fake inspection reports as they are) is changed between
 * the two inspections.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { hostWorkflowId } from '../../model/host-ref';
import { requestInspectionUpdate, type HostView } from '../../contracts/host';
import { remediationWorkflowId, type RemediationInput, type RemediationView } from '../../contracts/remediation';
import type { RemediationRequest } from '../../model/remediation';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';

let h: Harness;
const NS = 'remed-beyond';
const IMAGE = { url: 'http://127.0.0.1/images/remed-beyond.qcow2', checksum: 'e'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };
/** Shorter than any power change through Ironic: the reboot is never seen done in time. */
const NEVER_IN_TIME = 0.001;

beforeAll(async () => {
  h = await startHarness({ hostOptions: FAST_HOST_OPTIONS });
});
afterAll(async () => {
  await h?.close();
});

const ref = (name: string) => ({ namespace: NS, name });
const view = (name: string): Promise<HostView> => h.hosts.get(ref(name));

/** A provisioned host; with `inventory`, inspected with it (available first) before it is provisioned. */
async function provisionedHost(inventory?: Record<string, unknown>): Promise<string> {
  const name = uniq('rp');
  const spec = { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` }, bootMACAddress: randomMac(), online: true };
  await h.hosts.put(ref(name), { spec: inventory ? spec : { ...spec, image: IMAGE }, credentials: { username: 'admin', password: 'pw' } });
  if (inventory) {
    await waitFor(`${name} available`, async () => {
      const v = await view(name);
      return v.status.provisioning.state === 'available' && !v.currentOperation;
    }, { timeoutMs: 300_000 });
    await inspectWith(name, inventory);
    await h.hosts.setImage(ref(name), IMAGE);
  }
  await waitFor(`${name} provisioned`, async () => {
    const v = await view(name);
    return v.status.provisioning.state === 'provisioned' && v.status.poweredOn && !v.currentOperation;
  }, { timeoutMs: 300_000 });
  return name;
}

/** Inspects an available host again with the node's inventory set to `properties`, until its status shows them. */
async function inspectWith(name: string, properties: Record<string, unknown>): Promise<HostView> {
  const nodeId = (await view(name)).status.provisioning.ID;
  await h.ironic.patchNode(nodeId, Object.entries(properties).map(([k, value]) => ({ op: 'add' as const, path: `/properties/${k}`, value })));
  await h.client.workflow.getHandle(hostWorkflowId(ref(name))).executeUpdate(requestInspectionUpdate);
  return waitFor(`${name} inspected`, async () => {
    const v = await view(name);
    return v.status.provisioning.state === 'available' && !v.currentOperation && v.status.hardware?.ramMebibytes === properties.memory_mb ? v : undefined;
  }, { timeoutMs: 300_000 });
}

async function remediate(name: string, strategy: RemediationRequest['strategy']): Promise<WorkflowHandle> {
  const uid = randomUUID();
  const input: RemediationInput = { ref: ref(name), uid, request: { strategy }, kubernetes: false };
  return h.client.workflow.start('remediateWorkflow', { taskQueue: h.taskQueue, workflowId: remediationWorkflowId(input.ref, uid), args: [input] });
}

async function summaries(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? [])
    .filter((e) => e.activityTaskScheduledEventAttributes && e.userMetadata?.summary)
    .map((e) => String(defaultPayloadConverter.fromPayload(e.userMetadata!.summary!)));
}

describe('remediation beyond Metal3 (API mode)', { timeout: 900_000 }, () => {
  it('re-provisions the same image through the host workflow once the reboot did not bring the host back', async () => {
    const name = await provisionedHost();
    const since = new Date().toISOString();
    const handle = await remediate(name, { type: 'Reboot', timeoutSeconds: NEVER_IN_TIME, reprovision: {} });
    const done = (await handle.result()) as RemediationView;
    expect(done, done.message).toMatchObject({ outcome: 'succeeded', retryCount: 1, reprovisioned: 'succeeded', phase: 'Waiting' });
    expect(done.message).toMatch(/^remediated by re-provisioning the same image, after 1 power cycle\(s\)/);
    const v = await view(name);
    expect(v.status.provisioning).toMatchObject({ state: 'provisioned', image: IMAGE });
    expect(v.spec?.image).toEqual(IMAGE);
    expect(v.power.holds).toEqual({});
    // One deprovision and one provision, both the host workflow's own, after the power cycle.
    const ops = v.operations.filter((o) => o.startedAt >= since && (o.kind === 'deprovision' || o.kind === 'provision'));
    expect(ops.map((o) => `${o.kind}:${o.outcome}`)).toEqual(['deprovision:succeeded', 'provision:succeeded']);
    const steps = await summaries(handle);
    expect(steps.slice(-6)).toEqual([
      '1-remediate: read the image to re-provision',
      '1-remediate: deprovision (re-provision)',
      '1-remediate: wait for deprovision',
      '1-remediate: provision the same image (re-provision)',
      '1-remediate: wait for provision',
      '1-remediate: wait for powered on',
    ]);
    // The image's URL (possibly pre-signed) is never in a step or the message.
    expect(JSON.stringify(done.steps) + done.message).not.toContain(IMAGE.url);
  });

  it('re-inspects when the re-provision fails too, and names what changed in the failure', async () => {
    const name = await provisionedHost({ memory_mb: 65_536, cpus: 32, local_gb: 500 });
    expect((await view(name)).status.hardware).toMatchObject({ ramMebibytes: 65_536, cpu: { count: 32 } });
    // A DIMM and a CPU socket lost, a smaller disk: what the next inspection will read.
    await h.ironic.patchNode((await view(name)).status.provisioning.ID, [
      { op: 'add', path: '/properties/memory_mb', value: 49_152 },
      { op: 'add', path: '/properties/cpus', value: 16 },
      { op: 'add', path: '/properties/local_gb', value: 250 },
    ]);
    const since = new Date().toISOString();
    // The re-provision is given less time than any deprovision takes: it fails, and the re-inspection follows.
    const handle = await remediate(name, { type: 'Reboot', timeoutSeconds: NEVER_IN_TIME, reprovision: { timeoutSeconds: NEVER_IN_TIME }, reinspect: {} });
    const done = (await handle.result()) as RemediationView;
    expect(done, done.message).toMatchObject({ outcome: 'failed', phase: 'Failed', reprovisioned: 'failed', hostUnhealthy: true });
    expect(done.hardwareChanges).toEqual([
      'memory 65536 MiB → 49152 MiB (16384 MiB less: a missing or failed DIMM?)',
      'CPU count 32 → 16',
      'disk #1 (500 GiB): size 500 GiB → 250 GiB',
    ]);
    expect(done.message).toMatch(/^gave up after 1 power cycle\(s\), then a re-provision that failed \(deprovision not done in time .*\); re-inspection found: memory 65536 MiB → 49152 MiB .*; CPU count 32 → 16; disk #1/);
    const v = await view(name);
    expect(v.status.hardware).toMatchObject({ ramMebibytes: 49_152, cpu: { count: 16 } });
    // Left available without an image (given up on, it waits for a person), inspected once since.
    expect(v.status.provisioning.state).toBe('available');
    expect(v.spec?.image).toBeUndefined();
    expect(v.operations.filter((o) => o.kind === 'inspect' && o.startedAt >= since).map((o) => o.outcome)).toEqual(['succeeded']);
    expect((await summaries(handle)).slice(-6)).toEqual([
      '1-remediate: deprovision (re-inspect)',
      '1-remediate: wait for deprovision',
      '1-remediate: re-inspect',
      '1-remediate: wait for reinspect',
      '1-remediate: read the hardware found',
      '1-remediate: mark the host unhealthy',
    ]);
  });

  it('a remediation cancelled during its re-provision gives the host its image back', async () => {
    const name = await provisionedHost();
    const handle = await remediate(name, { type: 'Reboot', timeoutSeconds: NEVER_IN_TIME, reprovision: {} });
    await waitFor('the re-provision under way', async () => (await summaries(handle)).includes('1-remediate: wait for deprovision'), { timeoutMs: 240_000, intervalMs: 250 });
    await handle.cancel();
    await expect(handle.result()).rejects.toThrow();
    const v = await waitFor('provisioned again with its image', async () => {
      const x = await view(name);
      return x.status.provisioning.state === 'provisioned' && !x.currentOperation ? x : undefined;
    }, { timeoutMs: 300_000 });
    expect(v.spec?.image).toEqual(IMAGE);
    const done = (await handle.query('remediation')) as RemediationView;
    expect(done).toMatchObject({ outcome: 'cancelled' });
    expect(done.message).toContain('its image is back in its spec');
  });
});
