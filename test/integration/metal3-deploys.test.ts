/**
 * Metal3's kinds of deploy through Ironic (issue 16 item 7), on the real
 * Temporal and Ironic (fake-hardware), with the worker's and the activities'
 * Ironic traffic recorded by the proxy: live-iso (ramdisk deploy, boot_iso,
 * no config drive), oci:// images with registry credentials, custom deploy
 * (custom-agent and its deploy step), and preprovisioning network data.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { createIronicActivities } from '../../activities/ironic/activities';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { IronicClient } from '../../clients/ironic/client';
import type { IronicNode } from '../../clients/ironic/types';
import type { HostSpec, Image } from '../../model/host';
import { isDeploy, type IronicProxy, type RecordedRequest } from '../../bench/support/ironic-proxy';
import { randomMac, uniq, waitFor, type Harness } from '../support/harness';
import { useProxiedHarness } from '../support/proxied-harness';
import { IRONIC_HTTP_URL, SUSHY_URL } from '../support/env';
import { MockActivityEnvironment } from '@temporalio/testing';
import { newestHistoryError } from '../../activities/ironic/node-driver';
import { resetRedfishSystem } from '../support/redfish-system';
import { serveFiles, tinyIso, type FileServer } from '../../bench/support/bmc-files';

const NS = 'deploys';
const suite = useProxiedHarness();
let h: Harness;
let proxy: IronicProxy;
let ironic: IronicClient;
const secrets = new LocalSecretStore(mkdtempSync(join(tmpdir(), 'mf-deploys-')), randomBytes(32));
let acts: ReturnType<typeof createIronicActivities>;

beforeAll(() => {
  ({ h, proxy } = suite);
  // The activities' requests go through the proxy too: what they sent is read from its log.
  ironic = new IronicClient({ url: proxy.url });
  acts = createIronicActivities({ ironic, secrets, poll: { initialMs: 100, factor: 1.5, maxMs: 1000 } });
});

const DISK = { url: 'http://127.0.0.1/images/disk.qcow2', checksum: 'c'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };
const fakeSpec = (name: string, over: Partial<HostSpec> = {}): HostSpec => ({
  bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` },
  bootMACAddress: randomMac(),
  online: true,
  ...over,
});
const failureOf = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e);

/** An available fake node registered for a new host with `over` in its spec. */
async function availableNode(over: Partial<HostSpec> = {}) {
  const ref = { namespace: NS, name: uniq('dep') };
  await secrets.write(NS, `${ref.name}-bmc`, { username: 'admin', password: 'pw' });
  const { nodeId } = await acts.ensureNode({ ref, spec: fakeSpec(ref.name, over) });
  await acts.manageNode({ ref, nodeId });
  await acts.provideNode({ ref, nodeId, automatedCleaning: false });
  return { ref, nodeId };
}

const node = async (id: string): Promise<IronicNode> => (await ironic.getNode(id))!;
const deploysOf = (nodeId: string): RecordedRequest[] => proxy.requests.filter((r) => isDeploy(r) && r.path === `/v1/nodes/${nodeId}/states/provision`);
const lastBody = (rs: RecordedRequest[]) => JSON.parse(rs[rs.length - 1]!.body) as Record<string, unknown>;

async function removeNode(ref: { namespace: string; name: string }, nodeId: string) {
  await acts.undeployNode({ ref, nodeId, automatedCleaning: false });
  await acts.deleteNode({ ref, nodeId });
}

/**
 * Ironic's ramdisk deploy needs a boot interface that boots a ramdisk (fake-hardware's does not):
 * a Redfish system of this file's own on sushy-tools, booting the ISO from virtual media.
 */
const ISO_SYSTEM = `redfish-virtualmedia+${SUSHY_URL}/redfish/v1/Systems/6d660000-0000-4000-8000-000000000007`;
const ISO_MAC = '52:54:00:6d:66:71';
let isoServer: FileServer;
beforeAll(async () => {
  isoServer = await serveFiles({ 'live.iso': tinyIso() });
});
afterAll(() => isoServer?.close());

/** The image the system's virtual CD holds, as sushy-tools reports it. */
async function insertedMedia(address: string): Promise<string | undefined> {
  const auth = { authorization: `Basic ${Buffer.from('admin:password').toString('base64')}` };
  const path = address.slice(address.indexOf('/redfish/v1/Systems/'));
  const cd = (await (await fetch(`${SUSHY_URL}${path}/VirtualMedia/Cd`, { headers: auth })).json()) as { Image?: string | null };
  return cd.Image || undefined;
}

/** An available node on the ISO system for a new host (a node an earlier, interrupted run left on its MAC deleted first). */
async function isoNode(name: string) {
  await resetRedfishSystem(ISO_SYSTEM);
  const stale = await ironic.findNodeByMac(ISO_MAC);
  if (stale) {
    await ironic.setMaintenance(stale.uuid, 'test: left by an earlier run');
    await ironic.deleteNode(stale.uuid);
  }
  const ref = { namespace: NS, name: uniq(name) };
  await secrets.write(NS, `${ref.name}-bmc`, { username: 'admin', password: 'password' });
  const spec: HostSpec = { bmc: { address: ISO_SYSTEM, credentialsName: `${ref.name}-bmc` }, bootMACAddress: ISO_MAC, online: true };
  const { nodeId } = await acts.ensureNode({ ref, spec });
  expect((await node(nodeId)).deploy_interface).toBe('direct');
  await acts.manageNode({ ref, nodeId });
  await acts.provideNode({ ref, nodeId, automatedCleaning: false });
  return { ref, spec, nodeId };
}

describe('live-iso, as Metal3 deploys it', { timeout: 600_000 }, () => {
  it("boots boot_iso with Ironic's ramdisk deploy interface and no config drive; a disk image afterwards goes back to the default", async () => {
    const { ref, spec, nodeId } = await isoNode('iso');
    await secrets.write(NS, 'iso-user-data', { userData: '#cloud-config\n' });
    const iso: Image = { url: isoServer.url('live.iso'), format: 'live-iso' };
    expect((await acts.deployNode({ ref, nodeId, image: iso, userData: { name: 'iso-user-data' } })).provisionState).toBe('active');
    const live = await node(nodeId);
    expect(live.deploy_interface).toBe('ramdisk');
    expect(live.instance_info).toMatchObject({ boot_iso: iso.url });
    for (const key of ['image_source', 'image_disk_format', 'image_checksum', 'image_os_hash_value', 'configdrive']) expect(live.instance_info).not.toHaveProperty(key);
    expect(lastBody(deploysOf(nodeId))).not.toHaveProperty('configdrive');
    // As with Metal3's Ironic: Ironic copied the ISO into its http_root and the BMC's virtual media took it from
    // Ironic's own web server (the stack's httpboot, [deploy] http_url), not from where the image lives.
    expect(isoServer.hits('/live.iso')).toBeGreaterThan(0);
    expect(await insertedMedia(ISO_SYSTEM)).toMatch(new RegExp(`^${IRONIC_HTTP_URL}/`));

    // Registered again (a spec change) while provisioned: the deploy's interface stays.
    await acts.ensureNode({ ref, spec, nodeId });
    expect((await node(nodeId)).deploy_interface).toBe('ramdisk');

    // Torn down, the node's next deploy of a disk image is a direct deploy again, boot_iso gone.
    await acts.undeployNode({ ref, nodeId, automatedCleaning: false });
    const patches = proxy.requests.length;
    // Without an agent ramdisk the direct deploy cannot finish: refused, or waiting for the agent until aborted.
    let ended = false;
    const deploying = acts.deployNode({ ref, nodeId, image: DISK }).then(() => undefined, () => undefined).finally(() => (ended = true));
    await waitFor('the disk deploy refused or waiting for its agent', async () => ended || (await node(nodeId)).provision_state === 'wait call-back', { timeoutMs: 240_000 });
    if (!ended) await ironic.abortProvisioning(nodeId);
    await deploying;
    const sent = proxy.requests.slice(patches).find((r) => r.method === 'PATCH' && r.path === `/v1/nodes/${nodeId}`);
    expect(JSON.parse(sent!.body)).toEqual(expect.arrayContaining([
      { op: 'add', path: '/instance_info/image_source', value: DISK.url },
      { op: 'remove', path: '/deploy_interface' },
    ]));
    const disk = await node(nodeId);
    expect(disk.deploy_interface).toBe('direct');
    expect(disk.instance_info).not.toHaveProperty('boot_iso');
    expect(JSON.parse(proxy.requests.slice(patches).find((r) => isDeploy(r) && r.path.includes(nodeId))!.body)).toHaveProperty('configdrive');
    await removeNode(ref, nodeId);
  });

  it("names a failed deploy's reason from the node's history once Ironic's power sync has cleared last_error", async () => {
    const { ref, nodeId } = await isoNode('iso-gone');
    // Ironic's check of the ISO (a HEAD) passes, its download (a GET) fails in the deploy step: recorded in
    // last_error and in the node's history.
    const flaky = createServer((req, res) => res.writeHead(req.method === 'HEAD' ? 200 : 503, { 'content-length': '0' }).end());
    await new Promise<void>((r) => flaky.listen(0, '127.0.0.1', r));
    const missing: Image = { url: `http://127.0.0.1:${(flaky.address() as AddressInfo).port}/gone.iso`, format: 'live-iso' };
    const first = await failureOf(acts.deployNode({ ref, nodeId, image: missing }));
    expect(first).toBeInstanceOf(ApplicationFailure);
    expect((first as ApplicationFailure).message).toMatch(/^deploy failed: \S/);
    // Ironic's power sync (every 30 s on the test stack) clears last_error once it confirms the power state.
    await waitFor('last_error cleared by the power sync', async () => ((await node(nodeId)).last_error ? undefined : true), { timeoutMs: 180_000 });
    const reason = newestHistoryError(await ironic.getNodeHistory(nodeId));
    expect(reason).toBeTruthy();
    // The same activity read late, as a retry after its worker died is (it sent the deploy before): Ironic's reason still named.
    const late = await failureOf(new MockActivityEnvironment({ heartbeatDetails: { issued: ['active'] } }).run(acts.deployNode, { ref, nodeId, image: missing }));
    expect(late).toBeInstanceOf(ApplicationFailure);
    expect((late as ApplicationFailure).message).toContain(`deploy failed: ${reason}`);
    expect((late as ApplicationFailure).message).not.toMatch(/no reason given/);
    flaky.close();
    await removeNode(ref, nodeId);
  });
});

describe('oci:// images', { timeout: 600_000 }, () => {
  const OCI: Image = { url: 'oci://registry.example:5000/os/fedora:41', ociAuthSecretName: 'pull-secret' };
  const dockerConfig = (auths: Record<string, unknown>) => ({ '.dockerconfigjson': JSON.stringify({ auths }) });

  it("hands Ironic the registry's credentials as image_pull_secret (masked in Ironic's answers), no checksum needed", async () => {
    const { ref, nodeId } = await availableNode();
    const token = `s3cr3t-${randomBytes(6).toString('hex')}`;
    await secrets.write(NS, 'pull-secret', dockerConfig({
      'other.example': { auth: Buffer.from('nobody:nothing').toString('base64') },
      'https://registry.example:5000/v1/': { auth: Buffer.from(`robot:${token}`).toString('base64') },
    }));
    expect((await acts.deployNode({ ref, nodeId, image: OCI })).provisionState).toBe('active');
    const deployed = await node(nodeId);
    expect(deployed.instance_info).toMatchObject({ image_source: OCI.url, image_pull_secret: '******' });
    expect(deployed.instance_info).not.toHaveProperty('image_os_hash_value');
    const patch = proxy.requests.find((r) => r.method === 'PATCH' && r.path === `/v1/nodes/${nodeId}` && r.body.includes('image_pull_secret'));
    expect(JSON.parse(patch!.body)).toContainEqual({ op: 'add', path: '/instance_info/image_pull_secret', value: `robot:${token}` });

    // A disk image from a web server afterwards: the pull secret does not stay behind.
    await acts.undeployNode({ ref, nodeId, automatedCleaning: false });
    await acts.deployNode({ ref, nodeId, image: DISK });
    expect((await node(nodeId)).instance_info).not.toHaveProperty('image_pull_secret');
    await removeNode(ref, nodeId);
  });

  it('fails with the Secret and the registry named, never a credential, when the Secret has no entry for the registry', async () => {
    const { ref, nodeId } = await availableNode();
    await secrets.write(NS, 'pull-secret', dockerConfig({ 'quay.example': { username: 'u', password: 'hunter2-not-here' } }));
    const err = await failureOf(acts.deployNode({ ref, nodeId, image: OCI }));
    expect(err).toBeInstanceOf(ApplicationFailure);
    const message = (err as ApplicationFailure).message;
    expect(message).toMatch(/spec\.image\.ociAuthSecretName: Secret deploys\/pull-secret has no entry for registry registry\.example:5000/);
    expect(message).not.toContain('hunter2');
    expect((await node(nodeId)).provision_state).toBe('available');
    await acts.deleteNode({ ref, nodeId });
  });
});

describe('preprovisioningNetworkDataName', { timeout: 600_000 }, () => {
  it("sets the node's network_data at registration (YAML read as Metal3 reads it) and is the config drive's default network data", async () => {
    const networkData = { links: [{ id: 'eth0', type: 'phy', ethernet_mac_address: '52:54:00:00:00:01' }], networks: [], services: [] };
    const yaml = 'links:\n  - id: eth0\n    type: phy\n    ethernet_mac_address: "52:54:00:00:00:01"\nnetworks: []\nservices: []\n';
    await secrets.write(NS, 'ipa-net', { networkData: yaml });
    const { ref, nodeId } = await availableNode({ preprovisioningNetworkDataName: 'ipa-net' });
    expect((await node(nodeId)).network_data).toEqual(networkData);
    await acts.deployNode({ ref, nodeId, image: DISK, preprovisioningNetworkDataName: 'ipa-net' });
    expect(lastBody(deploysOf(nodeId)).configdrive).toMatchObject({ network_data: networkData });

    // Given networkData wins over it.
    await secrets.write(NS, 'host-net', { networkData: '{"links": [], "networks": [], "services": []}' });
    await acts.undeployNode({ ref, nodeId, automatedCleaning: false });
    await acts.deployNode({ ref, nodeId, image: DISK, networkData: { name: 'host-net' }, preprovisioningNetworkDataName: 'ipa-net' });
    expect(lastBody(deploysOf(nodeId)).configdrive).toMatchObject({ network_data: { links: [], networks: [], services: [] } });
    await removeNode(ref, nodeId);
  });
});

describe('customDeploy.method', { timeout: 600_000 }, () => {
  it("provisions a host with no image through Ironic's custom-agent deploy interface and the method as its deploy step", async () => {
    const ref = { namespace: NS, name: uniq('custom') };
    // Cleaning disabled: with custom-agent the fake node waits for an agent that never comes, as a real one waits for IPA.
    const spec = fakeSpec(ref.name, { customDeploy: { method: 'install_coreos' }, automatedCleaningMode: 'disabled' });
    await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
    const nodeId = await waitFor('the deploy sent', async () => {
      const v = await h.hosts.get(ref);
      const id = v.status.provisioning.ID;
      return id && v.status.provisioning.state === 'provisioning' && deploysOf(id).length > 0 ? id : undefined;
    }, { timeoutMs: 240_000 });
    expect(lastBody(deploysOf(nodeId))).toMatchObject({
      target: 'active',
      deploy_steps: [{ interface: 'deploy', step: 'install_coreos', args: {}, priority: 80 }],
    });
    const deploying = await node(nodeId);
    expect(deploying.deploy_interface).toBe('custom-agent');
    expect(deploying.instance_info).not.toHaveProperty('image_source');
    // Deleting the host stops the deploy that waits for its agent, and removes the node.
    await h.hosts.remove(ref);
    await waitFor('the node deleted', async () => (await ironic.getNode(nodeId)) === undefined, { timeoutMs: 240_000 });
  });
});
