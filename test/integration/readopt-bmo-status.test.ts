/**
 * A host re-adopted from a status as Metal3's operator writes it, on the real
 * Temporal and Ironic: `status.provisioning.image: {"url": ""}` on a host
 * that runs no image and `null` timestamps are BMO's values and are taken; a
 * status the workflow refuses leaves no run behind (a run with an empty
 * status would register the host from scratch once its spec arrived).
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { ReadoptRefused, readoptHost } from '../../control/host-run';
import type { HostSpec, HostStatus } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery } from '../../contracts/host';
import { isPowerChange } from '../../bench/support/ironic-proxy';
import { randomMac, uniq, waitFor } from '../support/harness';
import { useProxiedHarness } from '../support/proxied-harness';

const NS = 'bmo-status';
const suite = useProxiedHarness();

/** A node as BMO leaves an available host's: registered and manageable (BMO's cleaning runs when it provisions). */
async function manageableNode(name: string, mac: string): Promise<string> {
  const { h } = suite;
  const node = await h.ironic.createNode({ name: `${NS}~${name}`, driver: 'fake-hardware', inspect_interface: 'agent' });
  await h.ironic.createPort(node.uuid, mac);
  await h.ironic.setProvisionState(node.uuid, 'manage');
  await waitFor('manageable', async () => ((await h.ironic.getNode(node.uuid))?.provision_state === 'manageable' ? true : undefined), { timeoutMs: 120_000 });
  // On, as BMO's status says (fake-hardware keeps whatever power state it is given).
  await h.ironic.setPowerState(node.uuid, 'power on');
  await waitFor('on', async () => {
    const n = await h.ironic.getNode(node.uuid);
    return n?.power_state === 'power on' && !n.target_power_state ? true : undefined;
  }, { timeoutMs: 60_000 });
  return node.uuid;
}

/** An available host's status exactly as BMO writes it (as read from its object: JSON nulls included). */
const bmoAvailable = (nodeId: string): unknown => ({
  errorCount: 0,
  errorMessage: '',
  hardwareProfile: 'unknown',
  lastUpdated: '2026-12-01T17:12:57Z',
  operationHistory: {
    deprovision: { end: null, start: null },
    inspect: { end: null, start: null },
    provision: { end: null, start: null },
    register: { end: '2026-12-01T17:12:48Z', start: '2026-12-01T17:12:33Z' },
  },
  operationalStatus: 'OK',
  poweredOn: true,
  provisioning: { ID: nodeId, bootMode: 'UEFI', image: { url: '' }, rootDeviceHints: { deviceName: '/dev/sda' }, state: 'available' },
  provisioningFailCount: 0,
});

describe("a status as Metal3's operator writes it, re-adopted", { timeout: 600_000 }, () => {
  it('takes image.url "" as no image and null timestamps as absent: the host stays available, nothing re-registered from scratch', async () => {
    const { h, proxy } = suite;
    const ref = { namespace: NS, name: uniq('avail') };
    const mac = randomMac();
    const nodeId = await manageableNode(ref.name, mac);
    await h.secrets.write(NS, `${ref.name}-bmc`, { username: 'admin', password: 'pw' });
    const spec: HostSpec = { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: mac, online: true, inspectionMode: 'disabled' };
    const mark = proxy.requests.length;
    const result = await readoptHost(h.client, { ref, taskQueue: h.taskQueue, options: {}, status: bmoAvailable(nodeId) as HostStatus, spec });
    expect(result).toEqual({ restored: true });
    const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
    const v = await waitFor('adopted', async () => {
      const x = await handle.query(hostViewQuery);
      return x.operations.some((o) => o.kind === 'enroll' && o.outcome === 'succeeded') && !x.currentOperation ? x : undefined;
    }, { timeoutMs: 120_000 });
    expect(v.operations.map((o) => o.kind)).toEqual(['enroll']);
    expect(v.status.provisioning).toMatchObject({ state: 'available', ID: nodeId });
    expect(v.status.provisioning.image).toBeUndefined();
    expect(v.status.operationHistory.register).toEqual({ end: '2026-12-01T17:12:48Z', start: '2026-12-01T17:12:33Z' });
    expect(v.status.operationHistory.provision).toEqual({});
    const onNode = proxy.requests.slice(mark).filter((r) => r.path.startsWith(`/v1/nodes/${nodeId}`));
    expect(onNode.filter((r) => r.method === 'PUT' && /\/states\/provision$/.test(r.path))).toEqual([]);
    expect(onNode.filter(isPowerChange)).toEqual([]);
    await h.hosts.remove(ref);
  });

  it('refuses a status it cannot take with the field and reason, and leaves no workflow running', async () => {
    const { h } = suite;
    const ref = { namespace: NS, name: uniq('bad') };
    const status = bmoAvailable('0a887291-30a2-4287-9dbd-b25b42f1465d') as { provisioning: Record<string, unknown> };
    status.provisioning.state = 'provisioning error';
    const err = await readoptHost(h.client, { ref, taskQueue: h.taskQueue, options: {}, status: status as unknown as HostStatus }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ReadoptRefused);
    expect((err as ReadoptRefused).message).toMatch(/status\.provisioning\.state: /);
    expect((err as ReadoptRefused).message).not.toMatch(/Workflow Update failed/);
    await expect(h.client.workflow.getHandle(hostWorkflowId(ref)).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
  });
});
