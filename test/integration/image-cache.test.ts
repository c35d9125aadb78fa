/**
 * Deploys through the image cache (host option cacheImages, patch
 * image-cache), on the real Temporal and Ironic of the test stack and a
 * sushy-tools of this file's own: hosts provisioned at once from one
 * download at the origin (counted there; 6 in the test run, 20 in `npm run
 * test:scale`, METALFLOW_IMAGE_CACHE_TEST_HOSTS any other number), Ironic pointed at the cache's URL
 * with the hash inline; a direct host's BMC downloading its live ISO from the
 * cache; a checksum mismatch stopping the host in `available` before
 * anything is sent to the BMC; a direct host's config drive (user, network
 * and meta data) served beside the cache, inserted in sushy's USB slot and
 * read back with isoinfo, its URL and data nowhere in the host's history.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostRef, HostSpec, Image } from '../../model/host';
import type { HostView } from '../../contracts/host';
import { FAST_HOST_OPTIONS, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { availableFakeHost } from '../support/history-fixture';
import { imageBytes } from '../support/image-bytes';
import { startImageServer, type ImageServer } from '../support/image-server';
import { startTestImageCache, type TestImageCache } from '../support/image-cache';
import { unusedPort } from '../support/ports';
import { resetRedfishSystem } from '../support/redfish-system';
import { sushyState } from '../support/sushy-state';
import { secretsInHistories } from '../../bench/support/history-secrets';
import { hostWorkflowId } from '../../model/host-ref';
import { tinyIso } from '../../bench/support/bmc-files';
import { sha256, withConfigDriveIso } from '../support/config-drive-iso';
import { ownSushy } from '../bmc/support/sushy';

const NS = 'image-cache';
const SYSTEM = '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000005';
const QCOW2 = imageBytes.qcow2(2_000_000);
const ISO = tinyIso();
/** More hosts add no new behaviour (each one more waiter on the same download), only enrolling time. */
const HOSTS = Number(process.env.METALFLOW_IMAGE_CACHE_TEST_HOSTS ?? 6);

let h: Harness;
let origin: ImageServer;
let cache: TestImageCache;
let sushy: ReturnType<typeof ownSushy>;

beforeAll(async () => {
  origin = await startImageServer({
    '/os/disk.qcow2': { body: QCOW2 },
    '/os/live.iso': { body: ISO },
    // The same bytes under another path for the checksum-mismatch case: the failing host retries its check on its
    // own schedule, and those downloads must not count as the good image's.
    '/os/live-mismatch.iso': { body: ISO },
    '/os/SHA256SUMS': { body: `${sha256(QCOW2)}  disk.qcow2\n`, contentType: 'text/plain' },
  });
  cache = await startTestImageCache();
  sushy = ownSushy('image-cache-sushy', await unusedPort());
  sushy.start();
  h = await startHarness({ hostOptions: { ...FAST_HOST_OPTIONS, cacheImages: true }, imageCache: cache.served, configDrives: cache.configDrives });
});

afterAll(async () => {
  await h?.close();
  sushy?.stop();
  await cache?.close();
  await origin?.close();
});

const settle = <T>(what: string, probe: () => Promise<T | undefined | false>) => waitFor(what, probe, { timeoutMs: 300_000, intervalMs: 500 });
const view = async (ref: HostRef): Promise<HostView> => (await h.hosts.get(ref)) as HostView;
const gets = (path: string) => origin.seen.filter((s) => s === `GET ${path}`).length;

async function availableHost(): Promise<{ ref: HostRef; nodeId: string }> {
  const ref = { namespace: NS, name: uniq('c') };
  const { nodeId } = await availableFakeHost(h, ref, ref.name, 300_000);
  return { ref, nodeId };
}

describe('the image cache', { timeout: 900_000 }, () => {
  it(`provisions ${HOSTS} hosts from one download at the origin, Ironic pointed at the cache`, async () => {
    const hosts = await Promise.all(Array.from({ length: HOSTS }, () => availableHost()));
    const image: Image = { url: `${origin.url('/os/disk.qcow2')}?X-Amz-Signature=s3cr3t`, checksum: origin.url('/os/SHA256SUMS'), checksumType: 'auto', format: 'qcow2' };
    await Promise.all(hosts.map(({ ref }) => h.hosts.setImage(ref, image)));
    const cached = `${cache.server.boundUrl}/images/sha256-${sha256(QCOW2)}/disk.qcow2`;
    for (const { ref, nodeId } of hosts) {
      await settle(`${ref.name} provisioned`, async () => (await view(ref)).status.provisioning.state === 'provisioned');
      const node = await h.ironic.getNode(nodeId);
      expect(node?.instance_info).toMatchObject({ image_source: cached, image_os_hash_algo: 'sha256', image_os_hash_value: sha256(QCOW2) });
      // The host's status keeps the image as its spec gave it.
      expect((await view(ref)).status.provisioning.image).toEqual(image);
    }
    expect(gets('/os/disk.qcow2')).toBe(1);
    expect(cache.cache.downloads).toBe(1);
    // What Ironic's agent would download is the image itself.
    const served = await fetch(cached);
    expect(sha256(Buffer.from(await served.arrayBuffer()))).toBe(sha256(QCOW2));
    await Promise.all(hosts.map(({ ref }) => h.hosts.remove(ref)));
  });

  it("has a direct host's BMC boot the live ISO from the cache, and stops a mismatch before the BMC is asked", async () => {
    const address = `redfish-virtualmedia+${sushy.url}${SYSTEM}`;
    await resetRedfishSystem(address);
    const ref = { namespace: NS, name: uniq('direct') };
    const spec: HostSpec = { bmc: { address, credentialsName: `${ref.name}-bmc` }, online: true, provisioner: 'direct' };
    await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'password' } });
    await settle('available', async () => {
      const v = await view(ref);
      return v.status.provisioning.state === 'available' && !v.currentOperation ? v : undefined;
    });

    const wrong = sha256('not this ISO');
    await h.hosts.setImage(ref, { url: origin.url('/os/live-mismatch.iso'), format: 'live-iso', checksum: wrong, checksumType: 'sha256' });
    const failed = await settle('the image check fails', async () => {
      const v = await view(ref);
      return v.status.errorMessage?.startsWith('image check failed') ? v : undefined;
    });
    expect(failed.status.errorMessage).toContain(`sha256 expected ${wrong}, got ${sha256(ISO)}`);
    expect(failed.status.provisioning.state).toBe('available');
    expect(failed.operations.filter((o) => o.kind === 'provision')).toEqual([]);
    expect(await sushyState(sushy.url, SYSTEM)).toMatchObject({ inserted: false });
    expect(cache.cache.has(`sha256-${wrong}`)).toBe(false);

    const before = gets('/os/live.iso');
    // Downloaded once, unless a run of this test before (a retry) left it in the cache.
    const downloads = cache.cache.has(`sha256-${sha256(ISO)}`) ? 0 : 1;
    await h.hosts.setImage(ref, { url: origin.url('/os/live.iso'), format: 'live-iso', checksum: sha256(ISO), checksumType: 'sha256' });
    await settle('provisioned', async () => {
      const v = await view(ref);
      return v.status.provisioning.state === 'provisioned' && !v.currentOperation ? v : undefined;
    });
    const cached = `${cache.server.boundUrl}/images/sha256-${sha256(ISO)}/live.iso`;
    expect(await sushyState(sushy.url, SYSTEM)).toMatchObject({ power: 'On', bootTarget: 'Cd', inserted: true, image: cached });
    // The cache downloaded it once; sushy fetched it from the cache, not from the origin.
    expect(gets('/os/live.iso') - before).toBe(downloads);
    await h.hosts.remove(ref);
    // Gone before the next test's host takes the same system: this host's delete powers it off, and beside the
    // next host's power on it left that one waiting out its 120 s power check.
    await waitFor('deleted', async () => (await h.hosts.get(ref).then(() => false, () => true)) || undefined, { timeoutMs: 120_000 });
  });

  it('boots a direct host with a config-2 drive in the USB slot, read back as cloud-init reads it, its URL kept out of history', async () => {
    const address = `redfish-virtualmedia+${sushy.url}${SYSTEM}`;
    await resetRedfishSystem(address);
    const ref = { namespace: NS, name: uniq('drive') };
    const spec: HostSpec = { bmc: { address, credentialsName: `${ref.name}-bmc` }, online: true, provisioner: 'direct' };
    const userData = '#cloud-config\npassword: s3cr3t-user-data\n';
    const networkData = 'links:\n  - id: enp1s0\n    type: phy\n    ethernet_mac_address: 52:54:00:aa:bb:cc\nnetworks: []\nservices: []\n';
    await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'password' }, userData, networkData, metaData: 'role: worker\n' });
    await settle('available', async () => {
      const v = await view(ref);
      return v.status.provisioning.state === 'available' && !v.currentOperation ? v : undefined;
    });
    await h.hosts.setImage(ref, { url: origin.url('/os/live.iso'), format: 'live-iso', checksum: sha256(ISO), checksumType: 'sha256' });
    await settle('provisioned', async () => {
      const v = await view(ref);
      return v.status.provisioning.state === 'provisioned' && !v.currentOperation ? v : undefined;
    });
    expect(await sushyState(sushy.url, SYSTEM)).toMatchObject({ inserted: true, image: `${cache.server.boundUrl}/images/sha256-${sha256(ISO)}/live.iso` });
    const usb = await sushyState(sushy.url, SYSTEM, ['USBStick', 'Floppy']);
    expect(usb.inserted).toBe(true);
    const driveUrl = usb.image ?? '';
    expect(driveUrl).toMatch(new RegExp(`^${cache.server.boundUrl}/configdrive/[0-9a-f]{16}-[0-9a-f]{64}\\.iso$`));

    // Read back as a guest would: an ISO 9660 volume labelled config-2 with the OpenStack layout.
    await withConfigDriveIso(driveUrl, ({ volumeId, files, read }) => {
      expect(volumeId).toBe('config-2');
      expect(files).toEqual(['/openstack', '/openstack/latest', '/openstack/latest/meta_data.json', '/openstack/latest/network_data.json', '/openstack/latest/user_data']);
      expect(read('/openstack/latest/user_data')).toBe(userData);
      expect(JSON.parse(read('/openstack/latest/network_data.json'))).toEqual({ links: [{ id: 'enp1s0', type: 'phy', ethernet_mac_address: '52:54:00:aa:bb:cc' }], networks: [], services: [] });
      expect(JSON.parse(read('/openstack/latest/meta_data.json'))).toMatchObject({ 'metal3-namespace': NS, 'metal3-name': ref.name, name: ref.name, role: 'worker' });
    });

    // Deleted: ejected, and the drive is no longer served.
    await h.hosts.remove(ref);
    await waitFor('deleted', async () => (await h.hosts.get(ref).then(() => false, () => true)) || undefined, { timeoutMs: 120_000 });
    expect((await sushyState(sushy.url, SYSTEM, ['USBStick', 'Floppy'])).inserted).toBe(false);
    expect((await fetch(driveUrl)).status).toBe(404);
    const token = new URL(driveUrl).pathname;
    const { hits } = await secretsInHistories(h.client, [hostWorkflowId(ref)], [token, 's3cr3t-user-data', '52:54:00:aa:bb:cc']);
    expect(hits).toEqual([]);
  });
});
