/**
 * Deploys through the image cache (host option cacheImages, patch
 * image-cache), on the real Temporal and Ironic of the test stack and a
 * sushy-tools of this file's own: 20 hosts provisioned at once from one
 * download at the origin (counted there), Ironic pointed at the cache's URL
 * with the hash inline; a direct host's BMC downloading its live ISO from the
 * cache; a checksum mismatch stopping the host in `available` before
 * anything is sent to the BMC.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostRef, HostSpec, Image } from '../../types/host';
import type { HostView } from '../../workflows/definitions';
import { FAST_HOST_OPTIONS, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { availableFakeHost } from '../support/record-fixture';
import { imageBytes } from '../support/image-bytes';
import { startImageServer, type ImageServer } from '../support/image-server';
import { startTestImageCache, type TestImageCache } from '../support/image-cache';
import { unusedPort } from '../support/ports';
import { resetRedfishSystem } from '../support/redfish-system';
import { sushyState } from '../support/sushy-state';
import { tinyIso } from '../bmc/support/files';
import { ownSushy } from '../bmc/support/sushy';

const NS = 'image-cache';
const SYSTEM = '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000005';
const QCOW2 = imageBytes.qcow2(2_000_000);
const ISO = tinyIso();
const sha256 = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

let h: Harness;
let origin: ImageServer;
let cache: TestImageCache;
let sushy: ReturnType<typeof ownSushy>;

beforeAll(async () => {
  origin = await startImageServer({
    '/os/disk.qcow2': { body: QCOW2 },
    '/os/live.iso': { body: ISO },
    '/os/SHA256SUMS': { body: `${sha256(QCOW2)}  disk.qcow2\n`, contentType: 'text/plain' },
  });
  cache = await startTestImageCache();
  sushy = ownSushy('image-cache-sushy', await unusedPort());
  sushy.start();
  h = await startHarness({ hostOptions: { ...FAST_HOST_OPTIONS, cacheImages: true }, imageCache: cache.served });
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
  it('provisions 20 hosts from one download at the origin, Ironic pointed at the cache', async () => {
    const hosts = await Promise.all(Array.from({ length: 20 }, () => availableHost()));
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
    await h.hosts.setImage(ref, { url: origin.url('/os/live.iso'), format: 'live-iso', checksum: wrong, checksumType: 'sha256' });
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
    await h.hosts.setImage(ref, { url: origin.url('/os/live.iso'), format: 'live-iso', checksum: sha256(ISO), checksumType: 'sha256' });
    await settle('provisioned', async () => {
      const v = await view(ref);
      return v.status.provisioning.state === 'provisioned' && !v.currentOperation ? v : undefined;
    });
    const cached = `${cache.server.boundUrl}/images/sha256-${sha256(ISO)}/live.iso`;
    expect(await sushyState(sushy.url, SYSTEM)).toMatchObject({ power: 'On', bootTarget: 'Cd', inserted: true, image: cached });
    // The cache downloaded it once; sushy fetched it from the cache, not from the origin.
    expect(gets('/os/live.iso') - before).toBe(1);
    await h.hosts.remove(ref);
  });
});
