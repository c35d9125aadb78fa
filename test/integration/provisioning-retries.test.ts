/**
 * A failed deploy goes the way BMO's goes (patch provisioning-fail-count), on
 * the real dev server and the real Ironic: the deploy fails on the Ironic node
 * (a fake-hardware node switched to the `direct` deploy waits in `wait
 * call-back` for an agent; the test aborts it, and Ironic marks the node
 * `deploy failed`), the host deprovisions (Ironic tears the failed deploy
 * down), counts the failure in status.provisioningFailCount, goes back to
 * available and provisions again, until the retry limit; there it stops with
 * BMO's provisioning error. A changed image starts anew.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { HostSpec, Image } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import type { hostWorkflow } from '../../workflows/host/host';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { startImageServer, type ImageServer } from '../support/image-server';

const LIMIT = 2;
let h: Harness;
let images: ImageServer;
let image: Image;
beforeAll(async () => {
  h = await startHarness({ hostOptions: { ...FAST_HOST_OPTIONS, maxProvisioningRetries: LIMIT } });
  // Ironic's direct deploy checks that the image URL answers before it boots the agent.
  const body = Buffer.from(`metalflow test image ${uniq('img')}`);
  images = await startImageServer({ '/fails.qcow2': { body } });
  image = { url: images.url('/fails.qcow2'), checksum: createHash('sha256').update(body).digest('hex'), checksumType: 'sha256', format: 'qcow2' };
}, 120_000);
afterAll(async () => {
  await h?.close();
  await images?.close();
});

const NS = 'retries';
const ref = (name: string) => ({ namespace: NS, name });
const handle = (name: string) => h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref(name)));
const view = (name: string): Promise<HostView> => handle(name).query(hostViewQuery);
const kinds = (v: HostView): string[] => v.operations.map((o) => `${o.kind}:${o.outcome}`);

/** Waits for the node's deploy to wait for its agent, then aborts it: Ironic records `deploy failed`. */
async function failDeploy(nodeId: string): Promise<void> {
  await waitFor('the deploy waiting for its agent', async () => (await h.ironic.getNode(nodeId))?.provision_state === 'wait call-back', { timeoutMs: 120_000 });
  await h.ironic.abortProvisioning(nodeId);
}

it('a failed deploy deprovisions, counts, provisions again under the limit, and stops at it until the image changes', async () => {
  const name = uniq('fail');
  // Cleaning would wait for the agent too: the failed deploy is torn down without it.
  const spec: HostSpec = {
    bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` },
    bootMACAddress: randomMac(),
    online: true,
    automatedCleaningMode: 'disabled',
  };
  await h.hosts.put(ref(name), { spec, credentials: { username: 'admin', password: 'pw' } });
  const ready = await waitFor(`${name} available`, async () => {
    const v = await view(name);
    return v.status.provisioning.state === 'available' && v.currentOperation === undefined ? v : undefined;
  });
  const nodeId = ready.status.provisioning.ID;
  await h.ironic.patchNode(nodeId, [{ op: 'replace', path: '/deploy_interface', value: 'direct' }]);
  await h.hosts.setImage(ref(name), image);

  await failDeploy(nodeId);
  // Deprovisioned (the node torn down to available), counted, and provisioning again.
  const retrying = await waitFor('the second attempt', async () => {
    const v = await view(name);
    return v.currentOperation?.kind === 'provision' && v.operations.filter((o) => o.kind === 'provision').length === 2 ? v : undefined;
  }, { timeoutMs: 120_000 });
  expect(kinds(retrying).slice(-3)).toEqual(['provision:failed', 'deprovision:succeeded', 'provision:running']);
  expect(retrying.operations.find((o) => o.kind === 'provision')?.error).toMatch(/^deploy failed: /);
  expect(retrying.status.provisioningFailCount).toBe(1);
  expect(retrying.status.lastAttemptedImage).toEqual(image);
  expect(retrying.status.provisioning.state).toBe('provisioning');

  await failDeploy(nodeId);
  const stopped = await waitFor('the retry limit', async () => {
    const v = await view(name);
    return v.status.errorMessage.includes('retry limit') && v.currentOperation === undefined ? v : undefined;
  }, { timeoutMs: 120_000 });
  expect(stopped.status.provisioning.state).toBe('available');
  expect(stopped.status.provisioningFailCount).toBe(LIMIT);
  expect(stopped.status.errorType).toBe('provisioning error');
  expect(stopped.status.operationalStatus).toBe('error');
  expect(stopped.status.errorMessage).toBe(
    `provisioning failed ${LIMIT} times, retry limit (${LIMIT}) reached; change image or reset provisioningFailCount to retry`,
  );
  expect(kinds(stopped).slice(-2)).toEqual(['provision:failed', 'deprovision:succeeded']);
  expect((await h.ironic.getNode(nodeId))?.provision_state).toBe('available');
  // It stays there: no third attempt (the limit holds across a nudge of the host).
  await h.hosts.setPaused(ref(name), true);
  await h.hosts.setPaused(ref(name), false);
  const still = await waitFor('idle again', async () => {
    const v = await view(name);
    return !v.paused && v.currentOperation === undefined ? v : undefined;
  });
  expect(still.operations.filter((o) => o.kind === 'provision')).toHaveLength(LIMIT);

  // Another image (here its checksum, as BMO compares the whole image spec): counted from zero and tried.
  const next = { ...image, checksumType: 'auto' as const };
  await h.hosts.setImage(ref(name), next);
  const again = await waitFor('a new attempt', async () => {
    const v = await view(name);
    return v.currentOperation?.kind === 'provision' ? v : undefined;
  }, { timeoutMs: 120_000 });
  expect(again.status.provisioningFailCount).toBe(0);
  expect(again.status.lastAttemptedImage).toEqual(next);
  await h.hosts.remove(ref(name));
  const final = await handle(name).result();
  expect(kinds(final).slice(-3)).toEqual(['deprovision:succeeded', 'power:succeeded', 'delete:succeeded']);
}, 600_000);
