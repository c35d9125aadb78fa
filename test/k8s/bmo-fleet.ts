/**
 * A fleet as Metal3's baremetal-operator (BMO) left it, rebuilt from
 * test/fixtures/bmo-takeover/ in the test API server and the test Ironic:
 * the BareMetalHosts with BMO's statuses, their Secrets and HardwareData,
 * and the nodes with BMO's fields, their states reached through Ironic's own
 * verbs. Shared by the takeover tests.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IronicClient } from '../../clients/ironic/client';
import type { IronicNode } from '../../clients/ironic/types';
import { REPO_ROOT } from '../../config/env';
import { waitFor } from '../support/harness';
import type { RecordedRequest } from '../../bench/support/ironic-proxy';
import { kubectl } from './kube-harness';

export const BMO_FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'bmo-takeover');

export interface Bmh {
  metadata: {
    name: string;
    namespace: string;
    uid?: string;
    resourceVersion?: string;
    finalizers?: string[];
    annotations?: Record<string, string>;
    managedFields?: { manager?: string; subresource?: string }[];
  };
  spec: Record<string, unknown> & { online: boolean; bmc: { address: string; credentialsName: string }; bootMACAddress: string; image?: unknown; userData?: { name: string; namespace?: string } };
  status: Record<string, unknown> & {
    provisioning: { state: string; ID: string; image?: { url: string } };
    poweredOn: boolean;
    hardware?: unknown;
    operationHistory: unknown;
    operationalStatus?: string;
    errorType?: string;
    errorMessage?: string;
    errorCount?: number;
  };
}
export interface FixtureNode extends Record<string, unknown> {
  name: string;
  driver: string;
  driver_info: Record<string, unknown>;
  instance_info: Record<string, unknown>;
  provision_state: string;
  power_state: string | null;
}

const snapshot = {
  hosts: (JSON.parse(readFileSync(join(BMO_FIXTURES, 'bmh.json'), 'utf8')) as { items: Bmh[] }).items,
  nodes: ((n: { nodes?: FixtureNode[] } | FixtureNode[]) => (Array.isArray(n) ? n : n.nodes ?? []))(JSON.parse(readFileSync(join(BMO_FIXTURES, 'ironic-nodes.json'), 'utf8'))),
  hardwareData: (JSON.parse(readFileSync(join(BMO_FIXTURES, 'hardwaredata.json'), 'utf8')) as { items: { metadata: Record<string, unknown> & { name: string }; spec: unknown }[] }).items,
};
/** The snapshot's host of that name (a copy). */
export const bmoHost = (name: string): Bmh => structuredClone(snapshot.hosts.find((h) => h.metadata.name === name)!);
/** The snapshot's node of that host (a copy). */
export const bmoNode = (name: string): FixtureNode => structuredClone(snapshot.nodes.find((n) => n.name === `metal3~${name}`)!);

/** Requests that would change a host: provision-state verbs (clean, deploy, provide…), power, boot device, virtual media. */
export const drives = (r: RecordedRequest): boolean => r.method !== 'GET' && /\/states\/(provision|power|raid)$|\/management\/boot_device|\/vmedia/.test(r.path);

const microTime = (d: Date): string => d.toISOString().replace('Z', '000Z');
/** BMO's leader Lease as a running BMO holds it (renewed long enough for the test to look). */
export const bmoLease = (namespace: string, holder: string) => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name: 'baremetal-operator', namespace },
  spec: { holderIdentity: holder, leaseDurationSeconds: 3600, acquireTime: microTime(new Date()), renewTime: microTime(new Date()), leaseTransitions: 0 },
});

export interface FleetContext {
  ns: string;
  ironic: IronicClient;
  /** The sushy-tools endpoint and system a Redfish host of that name is given. */
  redfish?: (name: string) => { url: string; system: string };
}

export function bmoFleet(ctx: FleetContext) {
  const { ns, ironic } = ctx;
  const redfish = (name: string) => {
    const r = ctx.redfish?.(name);
    if (!r) throw new Error(`${name}: no sushy-tools system for it`);
    return r;
  };
  const getHost = (name: string): Bmh => JSON.parse(kubectl(['get', 'bmh', name, '-n', ns, '-o', 'json']).stdout) as Bmh;

  async function settled(nodeId: string, state: string, allowError = false): Promise<IronicNode> {
    return waitFor(`node ${nodeId} ${state}`, async () => {
      const n = await ironic.getNode(nodeId);
      if (n?.last_error && !allowError) throw new Error(`Ironic: ${n.last_error}`);
      return n?.provision_state === state && !n.target_provision_state ? n : undefined;
    }, { timeoutMs: 180_000, intervalMs: 250 });
  }

  return {
    getHost,
    settled,
    /**
     * BMO's node, with this test's endpoints: its interfaces, instance_info and driver_info shape kept, its
     * state reached by Ironic's verbs (`manage`, then `adopt` for an active one).
     */
    async recreateNode(name: string, n: FixtureNode, mac: string): Promise<IronicNode> {
      const interfaces = Object.fromEntries(Object.entries(n).filter(([k, v]) => k.endsWith('_interface') && typeof v === 'string'));
      const driverInfo =
        n.driver === 'redfish'
          ? { ...n.driver_info, redfish_address: redfish(name).url, redfish_system_id: redfish(name).system, redfish_username: 'admin', redfish_password: 'password' }
          : n.driver_info;
      // Ironic masks the config drive it was given; the node keeps the rest of BMO's instance_info.
      const { configdrive: _masked, ...instanceInfo } = n.instance_info;
      const node = await ironic.createNode(
        {
          name: `${ns}~${name}`,
          driver: n.driver,
          ...interfaces,
          driver_info: driverInfo,
          properties: n.properties,
          automated_clean: n.automated_clean,
          instance_info: instanceInfo,
          ...(n.provision_state === 'active' ? { instance_uuid: randomUUID() } : {}),
        },
        'latest',
      );
      await ironic.createPort(node.uuid, mac);
      if (n.provision_state === 'enroll') return (await ironic.getNode(node.uuid))!;
      await ironic.setProvisionState(node.uuid, 'manage');
      await settled(node.uuid, 'manageable');
      if (n.provision_state === 'active') {
        await ironic.setProvisionState(node.uuid, 'adopt');
        await settled(node.uuid, 'active');
      }
      if (n.power_state === 'power on' || n.power_state === 'power off') {
        await ironic.setPowerState(node.uuid, n.power_state);
        await waitFor(`node ${name} ${n.power_state}`, async () => {
          const now = await ironic.getNode(node.uuid);
          return now?.power_state === n.power_state && !now.target_power_state ? now : undefined;
        }, { timeoutMs: 60_000, intervalMs: 250 });
      }
      return (await ironic.getNode(node.uuid))!;
    },

    /** The object as BMO wrote it: created, then its whole status put through the status subresource (as BMO's Update does). */
    loadHost(h: Bmh, nodeId: string, mac: string, secretVersion: string): Bmh {
      const name = h.metadata.name;
      const spec = { ...h.spec, bootMACAddress: mac };
      if (spec.bmc.address.startsWith('redfish')) spec.bmc = { ...spec.bmc, address: `redfish-virtualmedia+${redfish(name).url}${redfish(name).system}` };
      if (spec.userData) spec.userData = { ...spec.userData, namespace: ns };
      const { 'kubectl.kubernetes.io/last-applied-configuration': _applied, ...annotations } = h.metadata.annotations ?? {};
      kubectl(['create', '-n', ns, '-f', '-'], {
        input: JSON.stringify({ apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', metadata: { name, namespace: ns, finalizers: h.metadata.finalizers, annotations }, spec }),
      });
      const created = getHost(name);
      const credentials = { credentials: { name: spec.bmc.credentialsName, namespace: ns }, credentialsVersion: secretVersion };
      const status = { ...h.status, provisioning: { ...h.status.provisioning, ID: nodeId }, goodCredentials: credentials, triedCredentials: credentials };
      kubectl(['replace', '--subresource=status', '-n', ns, '-f', '-'], { input: JSON.stringify({ ...created, status }) });
      return { ...created, status };
    },

    /** The host's Secrets as BMO leaves them (its finalizer and label); the credentials Secret's resourceVersion. */
    loadSecrets(h: Bmh): string {
      const bmo = { finalizers: ['baremetalhost.metal3.io/secret'], labels: { 'environment.metal3.io': 'baremetal' } };
      const secret = (n: string, data: Record<string, string>) =>
        kubectl(['create', '-n', ns, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: n, namespace: ns, ...bmo }, type: 'Opaque', stringData: data }) });
      secret(h.spec.bmc.credentialsName, { username: 'admin', password: 'password' });
      if (h.spec.userData) secret(h.spec.userData.name, { userData: '#cloud-config\n' });
      return kubectl(['get', 'secret', h.spec.bmc.credentialsName, '-n', ns, '-o', 'jsonpath={.metadata.resourceVersion}']).stdout;
    },

    /** The snapshot's HardwareData of `from`, owned by the host `name`. */
    loadHardwareData(from: string, name: string, hostUid: string): void {
      const hd = snapshot.hardwareData.find((d) => d.metadata.name === from);
      if (!hd) return;
      const { finalizers } = hd.metadata as { finalizers?: string[] };
      kubectl(['create', '-n', ns, '-f', '-'], {
        input: JSON.stringify({
          apiVersion: 'metal3.io/v1alpha1',
          kind: 'HardwareData',
          metadata: { name, namespace: ns, finalizers, ownerReferences: [{ apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', name, uid: hostUid, controller: true, blockOwnerDeletion: true }] },
          spec: hd.spec,
        }),
      });
    },

    /** BMO's finalizers on the Secrets and HardwareData: removed so the namespace's objects can go. */
    releaseFinalizers(): void {
      for (const kind of ['secret', 'hardwaredata']) {
        for (const name of kubectl(['get', kind, '-n', ns, '-o', 'name'], { check: false }).stdout.split('\n').filter(Boolean)) {
          kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}'], { check: false });
        }
      }
    },
  };
}
