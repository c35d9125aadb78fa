/**
 * Taking over a fleet exactly as Metal3's baremetal-operator (BMO) left it,
 * from the snapshot in test/fixtures/bmo-takeover/ (captured from a real BMO
 * at 02aa5059e348; see its README). The BareMetalHosts (spec, status as BMO
 * wrote it: nulls, `image: {url: ""}`, finalizers) go into the real API
 * server, the nodes into the real Ironic with BMO's own fields (interfaces,
 * instance_info, driver_info's shape), their provision states reached
 * through Ironic's verbs (`adopt` for the active ones). Then the guide: the
 * controller and worker start. Counted at a recording proxy in front of the
 * worker's Ironic: no provision, clean, deploy, power or boot-device request.
 *
 * All twelve of the snapshot's hosts: five provisioned (h-04 powered off
 * with online false), five available (h-09 with an image and online false),
 * two Redfish hosts, on systems of this file's own sushy-tools (no other file
 * changes their power under it).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import type { IronicNode } from '../../clients/ironic/types';
import { REPO_ROOT } from '../../config/env';
import { hostWorkflowId } from '../../types/host-ref';
import { withoutNulls } from '../../types/metal3-status';
import { hostViewQuery, type HostView } from '../../workflows/definitions';
import { IRONIC_URL } from '../support/env';
import { unusedPort } from '../support/ports';
import { ownSushy, SUSHY_SYSTEMS } from '../bmc/support/sushy';
import { randomMac, uniq, waitFor } from '../support/harness';
import type { RecordedRequest } from '../support/ironic-proxy';
import { startProxyProcess } from '../support/ironic-proxy-process';
import { kubectl } from './kube-harness';
import { useShimSuite } from './shim-harness';

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'bmo-takeover');
const HOSTS = ['h-00', 'h-01', 'h-02', 'h-03', 'h-04', 'h-05', 'h-06', 'h-07', 'h-08', 'h-09', 'rf-0', 'rf-1'] as const;
type Name = (typeof HOSTS)[number];
/** Fake systems of this file's sushy-tools for the Redfish hosts (the snapshot's sushy ran elsewhere). */
const RF_SYSTEMS: Partial<Record<Name, string>> = { 'rf-0': SUSHY_SYSTEMS.bm01, 'rf-1': SUSHY_SYSTEMS.bm02 };
const rfSystem = (name: Name): string => {
  const system = RF_SYSTEMS[name];
  if (!system) throw new Error(`${name}: no sushy-tools system for it`);
  return system;
};

interface Bmh {
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
  status: Record<string, unknown> & { provisioning: { state: string; ID: string; image?: { url: string } }; poweredOn: boolean; hardware?: unknown; operationHistory: unknown };
}
interface FixtureNode extends Record<string, unknown> {
  name: string;
  driver: string;
  driver_info: Record<string, unknown>;
  instance_info: Record<string, unknown>;
  provision_state: string;
  power_state: string | null;
}

const snapshot = {
  hosts: (JSON.parse(readFileSync(join(FIXTURES, 'bmh.json'), 'utf8')) as { items: Bmh[] }).items,
  nodes: ((n: { nodes?: FixtureNode[] } | FixtureNode[]) => (Array.isArray(n) ? n : n.nodes ?? []))(JSON.parse(readFileSync(join(FIXTURES, 'ironic-nodes.json'), 'utf8'))),
  hardwareData: (JSON.parse(readFileSync(join(FIXTURES, 'hardwaredata.json'), 'utf8')) as { items: { metadata: Record<string, unknown> & { name: string }; spec: unknown }[] }).items,
};
const bmoHost = (name: Name): Bmh => structuredClone(snapshot.hosts.find((h) => h.metadata.name === name)!);
const bmoNode = (name: Name): FixtureNode => structuredClone(snapshot.nodes.find((n) => n.name === `metal3~${name}`)!);

const NS = uniq('mf-bmo');
let proxy: Awaited<ReturnType<typeof startProxyProcess>> | undefined;
let sushy: ReturnType<typeof ownSushy> | undefined;
beforeAll(async () => {
  proxy = await startProxyProcess(IRONIC_URL, join(mkdtempSync(join(tmpdir(), 'mf-bmo-')), 'ironic-requests.jsonl'));
  sushy = ownSushy('bmo-takeover-sushy', await unusedPort());
  sushy.start();
});
afterAll(() => {
  proxy?.stop();
  sushy?.stop();
  // The controller reads BMO's Lease in every namespace: none may outlive this file.
  kubectl(['delete', 'lease', 'baremetal-operator', '-n', NS, '--ignore-not-found'], { check: false });
  // BMO's finalizers on the Secrets and HardwareData: nothing deletes these hosts here.
  for (const kind of ['secret', 'hardwaredata']) {
    for (const name of kubectl(['get', kind, '-n', NS, '-o', 'name'], { check: false }).stdout.split('\n').filter(Boolean)) {
      kubectl(['patch', name, '-n', NS, '--type=merge', '-p', '{"metadata":{"finalizers":null}}'], { check: false });
    }
  }
});
const suite = useShimSuite(NS, uniq('tq-bmo'), {}, () => ({ IRONIC_URL: proxy!.url }));
const ironic = new IronicClient({ url: IRONIC_URL });

const json = <T>(args: string[]): T => JSON.parse(kubectl([...args, '-o', 'json']).stdout) as T;
const getHost = (name: Name): Bmh => json<Bmh>(['get', 'bmh', name, '-n', NS]);
const eventsOf = (name: string): { reason: string; message: string; type: string }[] =>
  json<{ items: { reason: string; message: string; type: string }[] }>(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`]).items;
const view = (name: Name): Promise<HostView | undefined> =>
  suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery).catch(() => undefined);

/** Requests that would change a host: provision-state verbs (clean, deploy, provide…), power, boot device, virtual media. */
const drives = (r: RecordedRequest): boolean => r.method !== 'GET' && /\/states\/(provision|power|raid)$|\/management\/boot_device|\/vmedia/.test(r.path);

async function settled(nodeId: string, state: string): Promise<IronicNode> {
  return waitFor(`node ${nodeId} ${state}`, async () => {
    const n = await ironic.getNode(nodeId);
    if (n?.last_error) throw new Error(`Ironic: ${n.last_error}`);
    return n?.provision_state === state && !n.target_provision_state ? n : undefined;
  }, { timeoutMs: 180_000, intervalMs: 250 });
}

/** BMO's node, with this test's endpoints: its interfaces, instance_info and driver_info shape kept, its state reached by Ironic's verbs. */
async function recreateNode(name: Name, mac: string): Promise<IronicNode> {
  const n = bmoNode(name);
  const interfaces = Object.fromEntries(Object.entries(n).filter(([k, v]) => k.endsWith('_interface') && typeof v === 'string'));
  const driverInfo =
    n.driver === 'redfish'
      ? { ...n.driver_info, redfish_address: sushy!.url, redfish_system_id: rfSystem(name), redfish_username: 'admin', redfish_password: 'password' }
      : n.driver_info;
  // Ironic masks the config drive it was given; the node keeps the rest of BMO's instance_info.
  const { configdrive: _masked, ...instanceInfo } = n.instance_info;
  const node = await ironic.createNode(
    {
      name: `${NS}~${name}`,
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
}

/** The object as BMO wrote it: created, then its whole status put through the status subresource (as BMO's Update does). */
function loadHost(name: Name, nodeId: string, mac: string, secretVersion: string): Bmh {
  const h = bmoHost(name);
  const spec = { ...h.spec, bootMACAddress: mac };
  if (spec.bmc.address.startsWith('redfish')) spec.bmc = { ...spec.bmc, address: `redfish-virtualmedia+${sushy!.url}${rfSystem(name)}` };
  if (spec.userData) spec.userData = { ...spec.userData, namespace: NS };
  const { 'kubectl.kubernetes.io/last-applied-configuration': _applied, ...annotations } = h.metadata.annotations ?? {};
  kubectl(['create', '-n', NS, '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', metadata: { name, namespace: NS, finalizers: h.metadata.finalizers, annotations }, spec }),
  });
  const created = getHost(name);
  const credentials = { credentials: { name: spec.bmc.credentialsName, namespace: NS }, credentialsVersion: secretVersion };
  const status = { ...h.status, provisioning: { ...h.status.provisioning, ID: nodeId }, goodCredentials: credentials, triedCredentials: credentials };
  kubectl(['replace', '--subresource=status', '-n', NS, '-f', '-'], { input: JSON.stringify({ ...created, status }) });
  return { ...created, status };
}

function loadSecrets(name: Name): string {
  const bmo = { finalizers: ['baremetalhost.metal3.io/secret'], labels: { 'environment.metal3.io': 'baremetal' } };
  const secret = (n: string, data: Record<string, string>) =>
    kubectl(['create', '-n', NS, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: n, namespace: NS, ...bmo }, type: 'Opaque', stringData: data }) });
  const h = bmoHost(name);
  secret(h.spec.bmc.credentialsName, { username: 'admin', password: 'password' });
  if (h.spec.userData) secret(h.spec.userData.name, { userData: '#cloud-config\n' });
  return kubectl(['get', 'secret', h.spec.bmc.credentialsName, '-n', NS, '-o', 'jsonpath={.metadata.resourceVersion}']).stdout;
}

function loadHardwareData(name: Name, hostUid: string): void {
  const hd = snapshot.hardwareData.find((d) => d.metadata.name === name);
  if (!hd) return;
  const { finalizers } = hd.metadata as { finalizers?: string[] };
  kubectl(['create', '-n', NS, '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'metal3.io/v1alpha1',
      kind: 'HardwareData',
      metadata: { name, namespace: NS, finalizers, ownerReferences: [{ apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', name, uid: hostUid, controller: true, blockOwnerDeletion: true }] },
      spec: hd.spec,
    }),
  });
}

const microTime = (d: Date): string => d.toISOString().replace('Z', '000Z');
/** BMO's leader Lease as a running BMO holds it (renewed long enough for the test to look). */
const bmoLease = (holder: string) => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name: 'baremetal-operator', namespace: NS },
  spec: { holderIdentity: holder, leaseDurationSeconds: 3600, acquireTime: microTime(new Date()), renewTime: microTime(new Date()), leaseTransitions: 0 },
});

const loaded = new Map<Name, { before: Bmh; node: IronicNode }>();
let mark = 0;

describe("a fleet as Metal3's operator left it, taken over", { timeout: 900_000 }, () => {
  beforeAll(async () => {
    // BMO stopped, metalflow not yet up.
    suite.shim.running('controller')?.kill('SIGKILL');
    // Ironic's verbs for the twelve nodes at once; the objects one after another (kubectl blocks).
    const macs = new Map(HOSTS.map((name) => [name, randomMac()] as const));
    const nodes = new Map(await Promise.all(HOSTS.map(async (name) => [name, await recreateNode(name, macs.get(name)!)] as const)));
    for (const name of HOSTS) {
      const mac = macs.get(name)!;
      const node = nodes.get(name)!;
      const version = loadSecrets(name);
      const before = loadHost(name, node.uuid, mac, version);
      loadHardwareData(name, before.metadata.uid!);
      loaded.set(name, { before, node });
    }
    // BMO still leads: a fresh Lease of its name.
    kubectl(['create', '-f', '-'], { input: JSON.stringify(bmoLease('bmo-7c9d_5f1e')) });
    mark = proxy!.requests().length;
    suite.shim.startController();
  }, 900_000);

  it("accepts every status BMO wrote (image.url \"\", null timestamps read back as absent)", () => {
    for (const name of HOSTS) {
      const stored = getHost(name);
      const bmo = bmoHost(name);
      expect(stored.status.provisioning.image).toEqual(bmo.status.provisioning.image);
      expect(stored.status.operationHistory).toEqual(withoutNulls(bmo.status.operationHistory));
      expect(stored.status.hardware).toEqual(bmo.status.hardware);
    }
    expect(getHost('h-05').status.provisioning.image).toEqual({ url: '' });
  });

  it("refuses to drive any host while BMO's Lease is held and fresh, with a Warning Event", async () => {
    for (const name of HOSTS) {
      await waitFor(`${name}: BareMetalOperatorActive`, async () => eventsOf(name).some((e) => e.reason === 'BareMetalOperatorActive') || undefined, { timeoutMs: 120_000 });
      const e = eventsOf(name).find((x) => x.reason === 'BareMetalOperatorActive')!;
      expect(e.type).toBe('Warning');
      expect(e.message).toMatch(new RegExp(`holds its leader Lease ${NS}/baremetal-operator \\(holder bmo-7c9d_5f1e`));
      expect(e.message).toMatch(/METALFLOW_BMO_CHECK=off/);
      expect(await view(name)).toBeUndefined();
    }
    expect(proxy!.requests().slice(mark).filter((r) => r.method !== 'GET')).toEqual([]);
  });

  it('adopts every host as it is: no provision, clean, deploy, power or boot-device request; STATE, ONLINE, hardware and history kept', async () => {
    // BMO stopped cleanly: it releases its Lease (LeaderElectionReleaseOnCancel).
    kubectl(['patch', 'lease', 'baremetal-operator', '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { holderIdentity: '', leaseDurationSeconds: 1 } })]);
    const views = new Map<Name, HostView>();
    for (const name of HOSTS) {
      views.set(name, await waitFor(`${name} adopted`, async () => {
        const v = await view(name);
        return v && v.operations.some((o) => o.kind === 'enroll' && o.outcome === 'succeeded') && !v.currentOperation ? v : undefined;
      }, { timeoutMs: 300_000 }));
      await waitFor(`${name}: WorkflowReadopted`, async () => eventsOf(name).some((e) => e.reason === 'WorkflowReadopted') || undefined, { timeoutMs: 60_000 });
    }
    const driven = proxy!.requests().slice(mark).filter(drives);
    expect(driven.map((r) => `${r.method} ${r.path} ${r.body}`)).toEqual([]);

    for (const name of HOSTS) {
      const { before, node } = loaded.get(name)!;
      const v = views.get(name)!;
      expect(v.operations.map((o) => o.kind), name).toEqual(['enroll']);
      expect(v.status.provisioning, name).toMatchObject({ state: before.status.provisioning.state, ID: node.uuid });
      expect(v.status.operationalStatus, name).toBe('OK');
      // What the workflow holds (and publishes) keeps BMO's record.
      expect(v.status.poweredOn, name).toBe(before.status.poweredOn);
      expect(v.status.hardware, name).toEqual(before.status.hardware);
      expect(v.status.operationHistory, name).toEqual(withoutNulls(before.status.operationHistory));
      // What kubectl get bmh shows.
      const after = getHost(name);
      expect(after.status.provisioning.state, name).toBe(before.status.provisioning.state);
      expect(after.spec.online, name).toBe(before.spec.online);
      expect(after.status.poweredOn, name).toBe(before.status.poweredOn);
      expect(after.status.hardware, name).toEqual(before.status.hardware);
      expect(after.status.operationHistory, name).toEqual(withoutNulls(before.status.operationHistory));
      const n = await ironic.getNode(node.uuid);
      expect(n, name).toMatchObject({ provision_state: node.provision_state, power_state: node.power_state, extra: { metalflow_host: `${NS}/${name}` } });
      if (node.provision_state === 'active') expect(n!.inspect_interface, `${name}: BMO's interface kept on the active node`).toBe(node.inspect_interface);
    }
  });

  it('then drives them: h-09 stays available while online is false, a provisioned host deprovisions, an available one provisions', async () => {
    const image = bmoHost('h-00').spec.image;
    kubectl(['patch', 'bmh', 'h-00', '-n', NS, '--type=json', '-p', JSON.stringify([{ op: 'remove', path: '/spec/image' }])]);
    kubectl(['patch', 'bmh', 'h-05', '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { image } })]);
    const until = (name: Name, state: string) =>
      waitFor(`${name} ${state}`, async () => {
        const v = await view(name);
        return v?.status.provisioning.state === state && !v.currentOperation ? v : undefined;
      }, { timeoutMs: 400_000 });
    const deprovisioned = await until('h-00', 'available');
    expect(deprovisioned.operations.map((o) => `${o.kind}:${o.outcome}`)).toEqual(['enroll:succeeded', 'deprovision:succeeded']);
    const provisioned = await until('h-05', 'provisioned');
    expect(provisioned.operations.map((o) => `${o.kind}:${o.outcome}`)).toEqual(['enroll:succeeded', 'provision:succeeded']);
    expect((await ironic.getNode(loaded.get('h-05')!.node.uuid))?.provision_state).toBe('active');

    // h-09: image set, online false; a spec change makes its workflow decide again, and it still waits.
    kubectl(['patch', 'bmh', 'h-09', '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { description: 'held off' } })]);
    const h09 = await waitFor('h-09 took the new spec', async () => {
      const v = await view('h-09');
      return v?.spec?.description === 'held off' && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 120_000 });
    expect(h09.status.provisioning.state).toBe('available');
    expect(h09.operations.map((o) => o.kind)).toEqual(['enroll']);
    const h09Node = loaded.get('h-09')!.node.uuid;
    expect(proxy!.requests().filter((r) => drives(r) && r.path.includes(h09Node))).toEqual([]);
    expect(getHost('h-09').status.provisioning.state).toBe('available');

    // Wanted on, it provisions with the image BMO held it with.
    kubectl(['patch', 'bmh', 'h-09', '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { online: true } })]);
    const h09On = await until('h-09', 'provisioned');
    expect(h09On.operations.map((o) => `${o.kind}:${o.outcome}`)).toEqual(['enroll:succeeded', 'provision:succeeded']);
    expect((await ironic.getNode(h09Node))?.provision_state).toBe('active');
  });
});
