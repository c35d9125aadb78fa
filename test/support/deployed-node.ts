/**
 * A node deployed on the real Ironic directly, as BMO leaves it for a
 * provisioned host (fake-hardware, deployed with the `fake` deploy interface,
 * powered on): what a host is taken over or re-adopted with.
 */
import type { IronicClient } from '../../clients/ironic/client';
import type { IronicNode } from '../../clients/ironic/types';
import { readoptHost } from '../../control/host-run';
import { emptyStatus, type HostRef, type HostSpec, type HostStatus } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView, type HostWorkflowOptions } from '../../contracts/host';
import type { hostWorkflow } from '../../workflows/host/host';
import { randomMac, waitFor, type Harness } from './harness';

async function settled(ironic: IronicClient, nodeId: string, state: string): Promise<IronicNode> {
  return waitFor(`node ${state}`, async () => {
    const n = await ironic.getNode(nodeId);
    if (n?.last_error) throw new Error(`Ironic: ${n.last_error}`);
    return n?.provision_state === state && !n.target_provision_state ? n : undefined;
  }, { timeoutMs: 120_000, intervalMs: 250 });
}

/** Registers node `name` with a port for `mac`, deploys it (instance_info from `image`) and powers it on. */
export async function deployedNode(
  ironic: IronicClient,
  name: string,
  mac: string,
  image: { url: string; checksum?: string },
  /** Interfaces other than metalflow's choice (BMO's `inspect_interface: agent`). */
  interfaces: Record<string, string> = {},
): Promise<IronicNode> {
  const node = await ironic.createNode({
    name,
    driver: 'fake-hardware',
    boot_interface: 'fake',
    deploy_interface: 'fake',
    inspect_interface: 'fake',
    management_interface: 'fake',
    power_interface: 'fake',
    ...interfaces,
    properties: { root_device: { name: 's== /dev/sda' } },
    instance_info: { image_source: image.url, ...(image.checksum ? { image_checksum: image.checksum } : {}) },
  });
  await ironic.createPort(node.uuid, mac);
  await ironic.setProvisionState(node.uuid, 'manage');
  await settled(ironic, node.uuid, 'manageable');
  await ironic.setProvisionState(node.uuid, 'provide');
  await settled(ironic, node.uuid, 'available');
  await ironic.setProvisionState(node.uuid, 'active');
  await settled(ironic, node.uuid, 'active');
  // fake-hardware records no power state of its own: a deploy leaves the host on.
  await ironic.setPowerState(node.uuid, 'power on');
  return waitFor('node on', async () => {
    const n = await ironic.getNode(node.uuid);
    return n?.power_state === 'power on' && !n.target_power_state ? n : undefined;
  }, { timeoutMs: 60_000, intervalMs: 250 });
}

/**
 * A host re-adopted from a Metal3 status as provisioned with custom deploy `method` (a custom deploy cannot
 * finish on fake-hardware: it waits for the agent), its node deployed here; returned once adopted and idle.
 */
export async function adoptedCustomDeployHost(h: Harness, ref: HostRef, method: string, options: Partial<HostWorkflowOptions>) {
  const mac = randomMac();
  const node = await deployedNode(h.ironic, `${ref.namespace}~${ref.name}`, mac, { url: 'http://127.0.0.1/images/custom.qcow2', checksum: 'd'.repeat(64) });
  await h.secrets.write(ref.namespace, `${ref.name}-bmc`, { username: 'admin', password: 'pw' });
  // Cleaning disabled: the fake node's cleaning would wait for an agent.
  const spec: HostSpec = {
    bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` },
    bootMACAddress: mac,
    online: true,
    automatedCleaningMode: 'disabled',
    customDeploy: { method },
  };
  const status: HostStatus = { ...emptyStatus(), poweredOn: true, provisioning: { state: 'provisioned', ID: node.uuid, customDeploy: { method } } };
  await readoptHost(h.client, { ref, taskQueue: h.taskQueue, options, status, spec });
  const handle = h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref));
  const until = (what: string, ok: (v: HostView) => boolean) =>
    waitFor(what, async () => {
      const v = await handle.query(hostViewQuery);
      return ok(v) ? v : undefined;
    }, { timeoutMs: 180_000 });
  const adopted = await until('adopted', (v) => v.operations.some((o) => o.kind === 'enroll' && o.outcome === 'succeeded') && !v.currentOperation);
  return { node, spec, handle, until, adopted };
}
