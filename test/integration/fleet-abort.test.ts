/**
 * Cancelling a fleet operation with abortInFlight, on the real stack: the
 * deploys in flight are really stuck (fake-hardware nodes switched to
 * Ironic's `direct` deploy wait in `wait call-back` for an agent that never
 * calls), so only the host workflows' own cancellation ends them. The hosts
 * end `cancelled` (no failure), their records say so, and no other host starts.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Image } from '../../model/host';
import { randomMac, uniq, waitFor } from '../support/harness';
import { callApi } from '../support/api-client';
import { startImageServer, type ImageServer } from '../support/image-server';
import { useFleetStack, fleetEnded, startFleet, waitForFleet, waitForHost } from '../support/fleet-hosts';

const stack = useFleetStack();
let images: ImageServer;
let image: Image;
beforeAll(async () => {
  // Ironic's direct deploy checks that the image URL answers before it boots the agent.
  const body = `metalflow fleet abort image ${uniq('img')}`;
  images = await startImageServer({ '/stuck.qcow2': { body } });
  image = { url: images.url('/stuck.qcow2'), checksum: createHash('sha256').update(body).digest('hex'), checksumType: 'sha256', format: 'qcow2' };
});
afterAll(async () => {
  await images?.close();
});

/** Available hosts whose deploys will hang in Ironic (cleaning, which would wait for the agent too, disabled). */
async function hostsThatHang(namespace: string, names: string[]) {
  return Promise.all(
    names.map(async (name) => {
      const ref = { namespace, name };
      await stack.h.hosts.put(ref, {
        spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` }, bootMACAddress: randomMac(), online: true, automatedCleaningMode: 'disabled' },
        credentials: { username: 'admin', password: 'pw' },
      });
      const v = await waitForHost(stack.h, ref, (x) => x.status.provisioning.state === 'available' && !x.currentOperation, 'available');
      await stack.h.ironic.patchNode(v.status.provisioning.ID, [{ op: 'replace', path: '/deploy_interface', value: 'direct' }]);
      return { ref, nodeId: v.status.provisioning.ID };
    }),
  );
}

describe('fleet cancel with abortInFlight', { timeout: 600_000 }, () => {
  it('stops the deploys in flight through the host workflows: cancelled, not failed, and no new host starts', async () => {
    const ns = uniq('fleet');
    const hosts = await hostsThatHang(ns, ['ab-a', 'ab-b', 'ab-c', 'ab-d']);
    const name = uniq('abort');
    await startFleet(stack.base, { name, operation: { kind: 'provision', image }, selector: { namespace: ns }, maxConcurrent: 2 });
    // The first two hosts' deploys are under way and hang.
    for (const x of hosts.slice(0, 2)) {
      await waitFor(`${x.ref.name} waiting for its agent`, async () => (await stack.h.ironic.getNode(x.nodeId))?.provision_state === 'wait call-back', { timeoutMs: 240_000 });
    }
    const cancelled = await callApi(stack.base, 'POST', `/v1/fleet-operations/${name}/cancel`, { reason: 'bad image', abortInFlight: true });
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.json.cancelled).toMatchObject({ reason: 'bad image', abortInFlight: true });

    const done = await waitForFleet(stack.base, name, fleetEnded, 'ended');
    expect(done.phase).toBe('cancelled');
    expect(done.counts).toMatchObject({ cancelled: 2, notStarted: 2, failed: 0, succeeded: 0, inFlight: 0 });
    expect(done.failures).toEqual([]);
    const why = `fleet operation ${name} aborted: bad image`;
    for (const x of done.hosts.slice(0, 2)) expect(x).toMatchObject({ outcome: 'cancelled', reason: `provision cancelled: the host was paused (${why})` });

    // From the host workflows' own records: the deploy ended cancelled, no error, the host paused; the rest never started.
    for (const x of hosts.slice(0, 2)) {
      const v = await stack.h.hosts.get(x.ref);
      expect(v.operations.filter((o) => o.kind === 'provision').map((o) => o.outcome)).toEqual(['cancelled']);
      expect(v.currentOperation).toBeUndefined();
      expect(v.status.errorCount).toBe(0);
      expect(v.paused?.reason).toBe(why);
      expect((await stack.h.ironic.getNode(x.nodeId))?.provision_state).not.toBe('wait call-back');
    }
    for (const x of hosts.slice(2)) {
      const v = await stack.h.hosts.get(x.ref);
      expect(v.operations.filter((o) => o.kind === 'provision')).toEqual([]);
      expect(v.spec?.image).toBeUndefined();
    }
    // A cancel on an ended run is refused.
    expect((await callApi(stack.base, 'POST', `/v1/fleet-operations/${name}/cancel`, { abortInFlight: true })).status).toBe(409);
  });

  it('refuses an abortInFlight that is not a boolean, naming it', async () => {
    const res = await callApi(stack.base, 'POST', `/v1/fleet-operations/${uniq('any')}/cancel`, { abortInFlight: 'yes' });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.json)).toContain('abortInFlight');
  });
});
