/**
 * A remediation's opt-in steps beyond Metal3, in API mode, end to end (the
 * test stack's Temporal and Ironic, fake-hardware): once the reboots have
 * not brought the host back, re-provision the same image through the host
 * workflow (patch remediation-reprovision). The reboots are made to fail by
 * a timeout shorter than any power change (a workflow started without the
 * API takes it), so the step after them runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { HostView } from '../../workflows/definitions';
import { remediationWorkflowId, type RemediationInput, type RemediationView } from '../../workflows/remediation-definitions';
import type { RemediationRequest } from '../../types/remediation';
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

async function provisionedHost(): Promise<string> {
  const name = uniq('rp');
  await h.hosts.put(ref(name), {
    spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` }, bootMACAddress: randomMac(), online: true, image: IMAGE },
    credentials: { username: 'admin', password: 'pw' },
  });
  await waitFor(`${name} provisioned`, async () => {
    const v = await view(name);
    return v.status.provisioning.state === 'provisioned' && v.status.poweredOn && !v.currentOperation;
  }, { timeoutMs: 300_000 });
  return name;
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
});
