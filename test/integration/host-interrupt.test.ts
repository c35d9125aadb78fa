/**
 * Interrupting a running operation, on the real dev server and the real
 * Ironic. A stuck deploy is real too: a fake-hardware node switched to
 * Ironic's `direct` (agent) deploy boots nothing and waits in `wait call-back`
 * for an agent that never calls, exactly as a server whose ramdisk hangs.
 * Ironic's part (the abort of a real wait, the node torn down and deleted) is
 * this file's; the workflow's own part of the other interruptions (an image
 * removed, a pause, a paused host's power check) runs on the time-skipping
 * server (test/unit/host-time-skipping.test.ts).
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostSpec, Image } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView, type OperationRecord } from '../../contracts/host';
import { operationEvents } from '../support/operation-history';
import type { hostWorkflow } from '../../workflows/host/host';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';

let h: Harness;
let images: Server;
let image: Image;
beforeAll(async () => {
  h = await startHarness({ hostOptions: FAST_HOST_OPTIONS });
  // Ironic's direct deploy checks that the image URL answers before it boots the agent.
  const body = Buffer.from(`metalflow test image ${uniq('img')}`);
  images = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
  const { port } = images.address() as AddressInfo;
  image = {
    url: `http://127.0.0.1:${port}/stuck.qcow2`,
    checksum: createHash('sha256').update(body).digest('hex'),
    checksumType: 'sha256',
    format: 'qcow2',
  };
}, 120_000);
afterAll(async () => {
  await h?.close();
  await new Promise((resolve) => images?.close(resolve));
});

const NS = 'interrupt';
const ref = (name: string) => ({ namespace: NS, name });
const fakeSpec = (name: string, over: Partial<HostSpec> = {}): HostSpec => ({
  bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` },
  bootMACAddress: randomMac(),
  online: true,
  ...over,
});
const handle = (name: string) => h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref(name)));
const view = (name: string): Promise<HostView> => handle(name).query(hostViewQuery);

async function available(name: string, over: Partial<HostSpec> = {}): Promise<HostView> {
  await h.hosts.put(ref(name), { spec: fakeSpec(name, over), credentials: { username: 'admin', password: 'pw' } });
  return waitFor(`${name} available`, async () => {
    const v = await view(name);
    return v.status.provisioning.state === 'available' && v.currentOperation === undefined ? v : undefined;
  });
}

/** An available host whose deploy then hangs in Ironic's `wait call-back`. */
async function stuckDeploy(name: string): Promise<string> {
  // Cleaning would wait for the agent too: the node is torn down without it.
  const nodeId = (await available(name, { automatedCleaningMode: 'disabled' })).status.provisioning.ID;
  await h.ironic.patchNode(nodeId, [{ op: 'replace', path: '/deploy_interface', value: 'direct' }]);
  await h.hosts.setImage(ref(name), image);
  await waitFor(`${name}'s deploy waiting for its agent`, async () => (await h.ironic.getNode(nodeId))?.provision_state === 'wait call-back');
  expect((await view(name)).currentOperation?.kind).toBe('provision');
  return nodeId;
}

/** The order, in an operation's history, of its wait's end and the settle that follows a cancellation. */
async function settleOrder(name: string, op: OperationRecord): Promise<string[]> {
  const names = new Map<string, string>();
  const seen: string[] = [];
  for (const e of await operationEvents(h.client, ref(name), op)) {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) {
      const name = scheduled.activityType?.name ?? '';
      names.set(String(e.eventId), name);
      if (name === 'settleNode') seen.push('settleNode scheduled');
    }
    const ended = e.activityTaskCanceledEventAttributes ?? e.activityTaskFailedEventAttributes ?? e.activityTaskCompletedEventAttributes;
    if (ended && names.get(String(ended.scheduledEventId)) === 'deployNode') seen.push('deployNode stopped');
  }
  return seen;
}

const lastOf = (v: HostView, kind: string) => [...v.operations].reverse().find((o) => o.kind === kind);

// The test walks a host to available, then into a stuck deploy, then out: several 60 s waits
// in a row, which a loaded 2-core machine can need (the default 120 s cut one short).
describe('interrupting operations', { timeout: 300_000 }, () => {
  it('a delete cancels a stuck deploy: aborted in Ironic, deprovisioned, deleted, and no error recorded', async () => {
    const name = uniq('del');
    const nodeId = await stuckDeploy(name);
    await h.hosts.remove(ref(name));
    // Without cancellation the delete waits for Ironic's callback timeout (10 minutes here, hours by default).
    const final = await handle(name).result();
    const provision = lastOf(final, 'provision');
    expect(provision?.outcome).toBe('cancelled');
    expect(provision?.cancelReason).toBe('the host is being deleted');
    expect(final.operations.map((o) => `${o.kind}:${o.outcome}`).slice(-4)).toEqual([
      'provision:cancelled',
      'deprovision:succeeded',
      'power:succeeded',
      'delete:succeeded',
    ]);
    expect(final.status.errorCount).toBe(0);
    expect(final.status.errorMessage).toBe('');
    expect(await h.ironic.getNode(nodeId)).toBeUndefined();
    // Ironic was told only after the deploy wait had stopped: a wait still running when the host
    // deprovisioned the node saw it available and deployed it again (a CI run: the delete then waited
    // out Ironic's 10-minute callback timeout).
    expect(await settleOrder(name, provision!)).toEqual(['deployNode stopped', 'settleNode scheduled']);
  });
});
