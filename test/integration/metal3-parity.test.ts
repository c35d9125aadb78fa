/**
 * Metal3 parity through the HTTP API's host service (issue 16), on the real
 * Temporal and Ironic, with the worker's Ironic traffic recorded by the proxy:
 * what Ironic received (the config drive, node properties, instance_info).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { createIronicActivities } from '../../activities/ironic/activities';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { IronicClient } from '../../clients/ironic/client';
import type { HostSpec, Image } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import type { HostView } from '../../contracts/host';
import { IRONIC_URL } from '../support/env';
import { isDeploy, type IronicProxy } from '../../bench/support/ironic-proxy';
import { FAST_HOST_OPTIONS, randomMac, uniq, waitFor, type Harness } from '../support/harness';
import { useProxiedHarness } from '../support/proxied-harness';
import { HostService } from '../../api/host-service';
import { callApi, serveApi } from '../support/api-client';
import { startImageServer } from '../support/image-server';

const NS = 'parity';
// Every test drives hosts and nodes of its own (requests are told apart by node): they run at once (vitest's
// five at a time), instead of one provisioning after another.
const suite = useProxiedHarness();
let h: Harness;
let proxy: IronicProxy;
/** The test's own view of Ironic, beside the proxy, and the activities on it. */
const ironic = new IronicClient({ url: IRONIC_URL });
const activitySecrets = new LocalSecretStore(mkdtempSync(join(tmpdir(), 'mf-parity-')), randomBytes(32));
const acts = createIronicActivities({ ironic, secrets: activitySecrets, poll: { initialMs: 100, factor: 1.5, maxMs: 1000 } });

beforeAll(() => {
  ({ h, proxy } = suite);
});

const IMAGE = { url: 'http://127.0.0.1/images/parity.qcow2', checksum: 'c'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };
const settle = <T>(what: string, probe: () => Promise<T | undefined | false>) => waitFor(what, probe, { timeoutMs: 180_000 });
const fakeSpec = (name: string, over: Partial<HostSpec> = {}): HostSpec => ({
  bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` },
  bootMACAddress: randomMac(),
  online: true,
  ...over,
});

async function hostIn(state: string, over: Partial<HostSpec> = {}) {
  const ref = { namespace: NS, name: uniq('par') };
  const spec = fakeSpec(ref.name, over);
  await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
  const view = await settle(state, async () => {
    const v = await h.hosts.get(ref);
    return v.status.provisioning.state === state && !v.currentOperation ? v : undefined;
  });
  return { ref, spec, view, nodeId: view.status.provisioning.ID };
}

/** The config drive the worker sent with the node's (only) deploy. */
function deployedMetaData(nodeId: string): Record<string, unknown> {
  const deploys = proxy.requests.filter((r) => isDeploy(r) && r.path === `/v1/nodes/${nodeId}/states/provision`);
  expect(deploys).toHaveLength(1);
  return (JSON.parse(deploys[0]!.body) as { configdrive: { meta_data: Record<string, unknown> } }).configdrive.meta_data;
}

describe.concurrent('the config drive meta_data.uuid of an API host', { timeout: 600_000 }, () => {
  it('is the uid the host got when it was created, shown in its view, and kept when it is re-adopted', async () => {
    const { ref, spec, view, nodeId } = await hostIn('provisioned', { image: IMAGE });
    expect(view.uid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const meta = deployedMetaData(nodeId);
    expect(meta.uuid).toBe(view.uid);
    expect(meta.uuid).not.toBe(nodeId);

    // A workflow that ended abnormally is re-adopted with the same uid.
    await h.client.workflow.getHandle(hostWorkflowId(ref)).terminate('test: the host workflow ends abnormally');
    await h.hosts.put(ref, { spec });
    const again = await settle('re-adopted', async () => {
      const v = await h.hosts.get(ref);
      return v.operations.some((o) => o.kind === 'enroll' && o.outcome === 'succeeded') && !v.currentOperation ? v : undefined;
    });
    expect(again.uid).toBe(view.uid);
    await h.hosts.remove(ref);
  });
});

/** Registers a node for a fake host with `over` in its spec; returns the node as Ironic holds it, and removes it. */
async function registeredNode(over: Partial<HostSpec>) {
  const ref = { namespace: NS, name: uniq('reg') };
  await activitySecrets.write(NS, `${ref.name}-bmc`, { username: 'admin', password: 'pw' });
  const { nodeId } = await acts.ensureNode({ ref, spec: fakeSpec(ref.name, over) });
  const node = await ironic.getNode(nodeId);
  await acts.deleteNode({ ref, nodeId });
  return node!;
}

const failureOf = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e);

describe.concurrent('root device hints on the Ironic node, as Metal3 sets them', () => {
  it('defaults to the hardware profile: /dev/sda with none given, the named profile otherwise', async () => {
    expect((await registeredNode({})).properties.root_device).toEqual({ name: 's== /dev/sda' });
    expect((await registeredNode({ hardwareProfile: 'unknown' })).properties.root_device).toEqual({ name: 's== /dev/sda' });
    expect((await registeredNode({ hardwareProfile: 'libvirt' })).properties.root_device).toEqual({ name: 's== /dev/vda' });
    expect((await registeredNode({ hardwareProfile: 'openstack' })).properties.root_device).toEqual({ name: 's== /dev/vdb' });
    expect((await registeredNode({ hardwareProfile: 'dell' })).properties.root_device).toEqual({ hctl: 's== 0:0:0:0' });
    expect((await registeredNode({ hardwareProfile: 'dell-raid' })).properties.root_device).toEqual({ hctl: 's== 0:2:0:0' });
    expect((await registeredNode({ hardwareProfile: 'empty' })).properties.root_device).toBeUndefined();
  });

  it("uses the spec's hints over the profile's, and sends a /dev/disk/by-path name as Ironic's by_path", async () => {
    expect((await registeredNode({ hardwareProfile: 'libvirt', rootDeviceHints: { minSizeGigabytes: 100 } })).properties.root_device).toEqual({ size: '>= 100' });
    const byPath = '/dev/disk/by-path/pci-0000:00:1f.2-ata-1';
    expect((await registeredNode({ rootDeviceHints: { deviceName: byPath } })).properties.root_device).toEqual({ by_path: `s== ${byPath}` });
    expect((await registeredNode({ rootDeviceHints: { deviceName: '/dev/nvme0n1' } })).properties.root_device).toEqual({ name: 's== /dev/nvme0n1' });
  });

  it('refuses to register with a hardware profile Metal3 does not know, naming the field and the known ones', async () => {
    const ref = { namespace: NS, name: uniq('reg') };
    await activitySecrets.write(NS, `${ref.name}-bmc`, { username: 'admin', password: 'pw' });
    const err = await failureOf(acts.ensureNode({ ref, spec: fakeSpec(ref.name, { hardwareProfile: 'hp-moonshot' }) }));
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).message).toMatch(/spec\.hardwareProfile: no hardware profile named "hp-moonshot" \(known: unknown, libvirt, dell, dell-raid, openstack, empty\)/);
    expect(await ironic.getNode(`${NS}~${ref.name}`)).toBeUndefined();
  });
});

/** Deploys `image` on an available fake node; returns its instance_info while active, then removes the node. */
async function deployedInstanceInfo(image: Image): Promise<Record<string, unknown>> {
  const ref = { namespace: NS, name: uniq('img') };
  await activitySecrets.write(NS, `${ref.name}-bmc`, { username: 'admin', password: 'pw' });
  const { nodeId } = await acts.ensureNode({ ref, spec: fakeSpec(ref.name) });
  await acts.manageNode({ ref, nodeId });
  await acts.provideNode({ ref, nodeId, automatedCleaning: false });
  expect((await acts.deployNode({ ref, nodeId, image })).provisionState).toBe('active');
  const info = (await ironic.getNode(nodeId))!.instance_info;
  await acts.undeployNode({ ref, nodeId, automatedCleaning: false });
  await acts.deleteNode({ ref, nodeId });
  return info;
}

describe.concurrent('images and architecture on the Ironic node, as Metal3 sets them', () => {
  it('leaves an unset format for Ironic to detect (no image_disk_format), and sends a given one', async () => {
    const unset = await deployedInstanceInfo({ url: 'http://127.0.0.1/images/any.img', checksum: 'a'.repeat(64) });
    expect(unset).toMatchObject({ image_source: 'http://127.0.0.1/images/any.img', image_os_hash_algo: 'sha256' });
    expect(unset).not.toHaveProperty('image_disk_format');
    expect(await deployedInstanceInfo({ ...IMAGE, format: 'raw' })).toMatchObject({ image_disk_format: 'raw' });
  });

  it('sets spec.architecture as the node\'s cpu_arch, and leaves cpu_arch alone when unset', async () => {
    expect((await registeredNode({ architecture: 'aarch64' })).properties.cpu_arch).toBe('aarch64');
    expect((await registeredNode({})).properties.cpu_arch).toBeUndefined();
  });
});

describe.concurrent('a checksum-file URL', () => {
  it('keeps its checksumType (image_os_hash_algo, the URL as image_os_hash_value); with auto it is image_checksum', async () => {
    const url = 'http://127.0.0.1/images/SHA512SUMS';
    const typed = await deployedInstanceInfo({ ...IMAGE, checksum: url, checksumType: 'sha512' });
    expect(typed).toMatchObject({ image_os_hash_algo: 'sha512', image_os_hash_value: url });
    expect(typed).not.toHaveProperty('image_checksum');
    const auto = await deployedInstanceInfo({ ...IMAGE, checksum: url, checksumType: 'auto' });
    expect(auto).toMatchObject({ image_checksum: url });
    expect(auto).not.toHaveProperty('image_os_hash_algo');
  });
});

describe.concurrent("BMO's steady-state transitions (item 8, patch metal3-transitions)", () => {
  const idleIn = (ref: { namespace: string; name: string }, state: string, more: (v: Awaited<ReturnType<Harness['hosts']['get']>>) => boolean = () => true) =>
    settle(`${ref.name} ${state}`, async () => {
      const v = await h.hosts.get(ref);
      return v.status.provisioning.state === state && !v.currentOperation && more(v) ? v : undefined;
    });
  const deploysOf = (nodeId: string) => proxy.requests.filter((r) => isDeploy(r) && r.path === `/v1/nodes/${nodeId}/states/provision`);

  it('a provisioned host given an image with another URL is deprovisioned and deploys the new one', async () => {
    const { ref, nodeId } = await hostIn('provisioned', { image: IMAGE, automatedCleaningMode: 'disabled' });
    const second = { ...IMAGE, url: 'http://127.0.0.1/images/parity-second.qcow2' };
    await h.hosts.setImage(ref, second);
    const v = await idleIn(ref, 'provisioned', (x) => x.status.provisioning.image?.url === second.url);
    const kinds = v.operations.map((o) => o.kind);
    expect(kinds.slice(kinds.lastIndexOf('deprovision'))).toEqual(['deprovision', 'provision']);
    const deploys = deploysOf(nodeId);
    expect(deploys).toHaveLength(2);
    expect((await h.ironic.getNode(nodeId))?.instance_info.image_source).toBe(second.url);
  });

  it('externallyProvisioned set on an available host, then cleared with an image: adopted as provisioned, never deployed', async () => {
    const { ref, spec, nodeId } = await hostIn('available', { automatedCleaningMode: 'disabled' });
    await h.hosts.put(ref, { spec: { ...spec, externallyProvisioned: true } });
    await idleIn(ref, 'externally provisioned');
    await h.hosts.put(ref, { spec: { ...spec, externallyProvisioned: false, image: IMAGE } });
    const v = await idleIn(ref, 'provisioned');
    expect(v.status.provisioning.image?.url).toBe(IMAGE.url);
    expect(deploysOf(nodeId)).toHaveLength(0);
    expect((await h.ironic.getNode(nodeId))?.provision_state).toBe('active');
  });

  it('changed root device hints on an available host go through preparing', async () => {
    const { ref, spec, nodeId, view } = await hostIn('available', { automatedCleaningMode: 'disabled' });
    const done = view.operations.length;
    await h.hosts.put(ref, { spec: { ...spec, rootDeviceHints: { deviceName: '/dev/sdb' } } });
    const v = await idleIn(ref, 'available', (x) => x.operations.slice(done).some((o) => o.kind === 'prepare'));
    expect(v.operations.slice(done).map((o) => [o.kind, o.state])).toEqual([['enroll', 'preparing'], ['prepare', 'preparing']]);
    expect((await h.ironic.getNode(nodeId))?.properties.root_device).toEqual({ name: 's== /dev/sdb' });
  });
});

describe.concurrent("spec.online gates provisioning, as BMO's NeedsProvisioning (patch provision-needs-online)", { timeout: 600_000 }, () => {
  it('an available host given an image while online is false stays available, and provisions once online is true', async () => {
    const { ref, spec, nodeId } = await hostIn('available', { online: false });
    const mark = proxy.requests.length;
    await h.hosts.put(ref, { spec: { ...spec, image: IMAGE } });
    // The workflow took the spec and decided on it (an operation would show as current, or in the list).
    const held = await settle('the image taken while off', async () => {
      const v = await h.hosts.get(ref);
      return v.spec?.image?.url === IMAGE.url && !v.currentOperation ? v : undefined;
    });
    expect(held.status.provisioning.state).toBe('available');
    expect(held.operations.map((o) => o.kind)).not.toContain('provision');
    // Nothing reached the node: no provide (automated cleaning), no deploy.
    expect(proxy.requests.slice(mark).filter((r) => r.method === 'PUT' && r.path === `/v1/nodes/${nodeId}/states/provision`)).toEqual([]);

    await h.hosts.put(ref, { spec: { ...spec, image: IMAGE, online: true } });
    const provisioned = await settle('provisioned once online', async () => {
      const v = await h.hosts.get(ref);
      return v.status.provisioning.state === 'provisioned' && !v.currentOperation ? v : undefined;
    });
    expect(provisioned.status.provisioning.image?.url).toBe(IMAGE.url);
    expect(proxy.requests.slice(mark).filter((r) => isDeploy(r) && r.path === `/v1/nodes/${nodeId}/states/provision`)).toHaveLength(1);
    await h.hosts.remove(ref);
  });
});

describe.concurrent("BMO's webhook and delete rules", { timeout: 600_000 }, () => {
  it('refuses a BMC address change once the host is past registering, naming the state and the way out', async () => {
    const { ref, spec } = await hostIn('available');
    const refused = await failureOf(h.hosts.put(ref, { spec: { ...spec, bmc: { ...spec.bmc!, address: `fake://${ref.name}-moved` } } }));
    expect(refused).toMatchObject({ status: 409, message: expect.stringMatching(/^spec\.bmc\.address cannot change while the host is available \(as in Metal3, only while it is registering or detached\)/) });
    expect((await h.hosts.get(ref)).spec?.bmc?.address).toBe(spec.bmc!.address);
    await h.hosts.remove(ref);
  });

  it('deletes a host still registering without a power off, as BMO does', async () => {
    const ref = { namespace: NS, name: uniq('reg') };
    // A BMC nothing answers on: Ironic's verify fails and the host stays registering.
    const spec: HostSpec = { bmc: { address: 'redfish+http://127.0.0.1:9/redfish/v1/Systems/1', credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true };
    await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
    await settle('a registration error', async () => {
      const v = await h.hosts.get(ref);
      return v.status.provisioning.state === 'registering' && v.status.errorType === 'registration error' ? v : undefined;
    });
    const before = (await h.hosts.get(ref)).operations.length;
    await h.hosts.remove(ref);
    const final: HostView = await h.client.workflow.getHandle(hostWorkflowId(ref)).result();
    // Straight to deleting: no power-off of a BMC that never answered (a registration retry may end first).
    const after = final.operations.slice(before);
    expect(after.filter((o) => o.kind === 'power')).toEqual([]);
    expect(after.at(-1)).toMatchObject({ kind: 'delete', outcome: 'succeeded', state: 'deleting' });
  });
});

describe.concurrent('resetting provisioningFailCount through the HTTP API', { timeout: 600_000 }, () => {
  it('a host held at the retry limit provisions again after DELETE …/provisioning-fail-count; nothing counted or no host is a clear error', async () => {
    // A retry limit of 1 (METALFLOW_MAX_PROVISIONING_RETRIES, read where hosts start): one failed deploy reaches it.
    const limited = new HostService({ client: h.client, secrets: h.secrets, taskQueue: h.taskQueue, hostOptions: { ...FAST_HOST_OPTIONS, maxProvisioningRetries: 1 } });
    const api = await serveApi(limited);
    const images = await startImageServer({ '/retry.qcow2': { body: Buffer.from('metalflow retry test image') } });
    try {
      const ref = { namespace: NS, name: uniq('fails') };
      const path = `/v1/namespaces/${NS}/hosts/${ref.name}/provisioning-fail-count`;
      // Cleaning would wait for an agent too: the failed deploy is torn down without it.
      const spec = fakeSpec(ref.name, { automatedCleaningMode: 'disabled' });
      await limited.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
      const available = await settle('available', async () => {
        const v = await limited.get(ref);
        return v.status.provisioning.state === 'available' && !v.currentOperation ? v : undefined;
      });
      const nothing = await callApi(api.base, 'DELETE', path);
      expect(nothing.status).toBe(409);
      expect(nothing.json.message).toBe(`host ${NS}/${ref.name} has no failed deploy counted (status.provisioningFailCount is 0): there is nothing to reset`);
      const unknown = await callApi(api.base, 'DELETE', `/v1/namespaces/${NS}/hosts/${uniq('nobody')}/provisioning-fail-count`);
      expect(unknown.status).toBe(404);
      expect(unknown.json.message).toMatch(/^host parity\/nobody-\S+ does not exist$/);

      // A fake-hardware node switched to the direct deploy waits for an agent that never comes; aborted, Ironic says `deploy failed`.
      const nodeId = available.status.provisioning.ID;
      await ironic.patchNode(nodeId, [{ op: 'replace', path: '/deploy_interface', value: 'direct' }]);
      const deployWaits = () => settle('the deploy waiting for its agent', async () => (await ironic.getNode(nodeId))?.provision_state === 'wait call-back');
      // Ironic's direct deploy checks that the image URL answers before it boots the agent.
      await limited.put(ref, { spec: { ...spec, image: { ...IMAGE, url: images.url('/retry.qcow2') } } });
      await deployWaits();
      await ironic.abortProvisioning(nodeId);
      const held = await settle('the retry limit', async () => {
        const v = await limited.get(ref);
        return v.status.provisioning.state === 'available' && !v.currentOperation && /retry limit \(1\) reached/.test(v.status.errorMessage) ? v : undefined;
      });
      expect(held.status).toMatchObject({ provisioningFailCount: 1, errorType: 'provisioning error' });
      expect(held.status.errorMessage).toBe('provisioning failed 1 times, retry limit (1) reached; change image or reset provisioningFailCount to retry');
      const deploysOf = () => proxy.requests.filter((r) => isDeploy(r) && r.path === `/v1/nodes/${nodeId}/states/provision`);
      const deploys = deploysOf().length;

      // What the message says: the count reset, and the host provisions its image again.
      const reset = await callApi(api.base, 'DELETE', path);
      expect(reset.status).toBe(202);
      expect(reset.json.status.provisioningFailCount).toBe(0);
      await deployWaits();
      const retrying = await limited.get(ref);
      expect(retrying.status.provisioning.state).toBe('provisioning');
      expect(retrying.status.provisioningFailCount).toBe(0);
      expect(deploysOf()).toHaveLength(deploys + 1);
      await ironic.abortProvisioning(nodeId);
      await limited.remove(ref);
      await h.client.workflow.getHandle(hostWorkflowId(ref)).result();
    } finally {
      await images.close();
      await api.app.close();
      limited.close();
    }
  });
});
