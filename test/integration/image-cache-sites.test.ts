/**
 * The image cache per site (host option imageCacheSites, patch
 * image-cache-site), on the real Temporal and Ironic of the test stack: two
 * sites, each with a cache worker of its own (its own folder and HTTP server
 * on loopback, polling the site's cache queue), hosts of both sites
 * provisioned with one image. Each site's cache downloads it once (counted at
 * the origin: two downloads in all) and each host's Ironic node is pointed at
 * its own site's cache. The main worker has no cache: a host whose image went
 * there would fail.
 */
import { TEST_FETCH_POLICY } from '../support/fetch-policy';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostRef, Image } from '../../model/host';
import type { HostView } from '../../contracts/host';
import type { DhcpSite } from '../../activities/dhcp/activities';
import { createSiteCacheWorker } from '../../workers/site-cache-worker';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { imageBytes } from '../support/image-bytes';
import { startImageServer, type ImageServer } from '../support/image-server';
import { startTestImageCache, type TestImageCache } from '../support/image-cache';

const NS = 'image-cache-sites';
const SITES = ['site-a', 'site-b'] as const;
const HOSTS_PER_SITE = 3;
const QCOW2 = imageBytes.qcow2(1_000_000);
const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

let h: Harness;
let origin: ImageServer;
let dhcpDir = '';
const caches: Record<string, TestImageCache> = {};
const siteWorkers: { worker: Worker; running: Promise<void> }[] = [];

beforeAll(async () => {
  origin = await startImageServer({ '/os/disk.qcow2': { body: QCOW2 } });
  // The hosts' site is spec.dhcp.site; their reservations go to plain folders (no dnsmasq needed to write them).
  dhcpDir = mkdtempSync(join(tmpdir(), 'metalflow-cache-sites-dhcp-'));
  const dhcpSites: Record<string, DhcpSite> = Object.fromEntries(SITES.map((s) => [s, { hostsDir: dhcpDir, leasesFile: join(dhcpDir, `${s}.leases`) }]));
  h = await startHarness({ hostOptions: { ...FAST_HOST_OPTIONS, cacheImages: true, imageCacheSites: [...SITES], dhcpLeaseCheckSeconds: 0 }, dhcpSites });
  for (const site of SITES) {
    caches[site] = await startTestImageCache();
    const worker = await createSiteCacheWorker({ connection: h.nativeConnection, namespace: 'default', taskQueue: h.taskQueue, site, cache: caches[site]!.served, fetchPolicy: TEST_FETCH_POLICY });
    siteWorkers.push({ worker, running: worker.run() });
  }
});

afterAll(async () => {
  for (const { worker, running } of siteWorkers) {
    worker.shutdown();
    await running;
  }
  await h?.close();
  for (const c of Object.values(caches)) await c.close();
  await origin?.close();
  if (dhcpDir) rmSync(dhcpDir, { recursive: true, force: true });
});

const view = async (ref: HostRef): Promise<HostView> => (await h.hosts.get(ref)) as HostView;
const settle = <T>(what: string, probe: () => Promise<T | undefined | false>) => waitFor(what, probe, { timeoutMs: 300_000, intervalMs: 500 });

async function availableHost(site: string, i: number): Promise<{ ref: HostRef; site: string; nodeId: string }> {
  const ref = { namespace: NS, name: uniq(`${site}-${i}`) };
  const net = site === 'site-a' ? '10.252.1' : '10.252.2';
  await h.hosts.put(ref, {
    spec: { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true, dhcp: { site, address: `${net}.${10 + i}` } },
    credentials: { username: 'admin', password: 'pw' },
  });
  const v = await settle(`${ref.name} available`, async () => {
    const x = await view(ref);
    return x.status.provisioning.state === 'available' && !x.currentOperation ? x : undefined;
  });
  return { ref, site, nodeId: v.status.provisioning.ID };
}

describe('the image cache per site', { timeout: 900_000 }, () => {
  it("provisions hosts of two sites, each from its own site's cache, with one origin download per site", async () => {
    const hosts = await Promise.all(SITES.flatMap((site) => Array.from({ length: HOSTS_PER_SITE }, (_, i) => availableHost(site, i))));
    const image: Image = { url: origin.url('/os/disk.qcow2'), checksum: sha256(QCOW2), checksumType: 'sha256', format: 'qcow2' };
    await Promise.all(hosts.map(({ ref }) => h.hosts.setImage(ref, image)));
    for (const { ref, site, nodeId } of hosts) {
      await settle(`${ref.name} provisioned`, async () => (await view(ref)).status.provisioning.state === 'provisioned');
      const node = await h.ironic.getNode(nodeId);
      expect(node?.instance_info).toMatchObject({ image_source: `${caches[site]!.server.boundUrl}/images/sha256-${sha256(QCOW2)}/disk.qcow2`, image_os_hash_value: sha256(QCOW2) });
    }
    // Counted at the origin: once per site, whatever the number of hosts.
    expect(origin.seen.filter((s) => s === 'GET /os/disk.qcow2').length).toBe(SITES.length);
    for (const site of SITES) {
      expect(caches[site]!.cache.downloads).toBe(1);
      const served = await fetch(`${caches[site]!.server.boundUrl}/images/sha256-${sha256(QCOW2)}/disk.qcow2`);
      expect(sha256(Buffer.from(await served.arrayBuffer()))).toBe(sha256(QCOW2));
    }
    await Promise.all(hosts.map(({ ref }) => h.hosts.remove(ref)));
  });
});
