/**
 * Records a fake-hardware host of a site with its own image cache worker
 * (host option imageCacheSites, patch image-cache-site), for the replay
 * test: enrolled with spec.dhcp.site, provisioned with its image cached by
 * the site's cache worker (the site's task queue), deleted. The shape before
 * the patch is every image-cache fixture recorded earlier.
 * `node --import tsx test/support/record-image-cache-site-history.ts` on a running test stack.
 */
import { TEST_FETCH_POLICY } from './fetch-policy';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery, type HostView } from '../../workflows/definitions';
import type { hostWorkflow } from '../../workflows/host';
import { createSiteCacheWorker } from '../../workers/site-cache-worker';
import { serveFiles } from '../bmc/support/files';
import { FAST_HOST_OPTIONS, startHarness, waitFor, type Harness } from './harness';
import { imageBytes } from './image-bytes';
import { startTestImageCache } from './image-cache';
import { assertNewFixtures, saveHistory } from './record-fixture';

const HOST_FILE = 'host-image-cache-site.json';
assertNewFixtures(HOST_FILE);
const SITE = 'rec-site';
const body = imageBytes.qcow2(200_000);
const origin = await serveFiles({ 'disk.qcow2': body });
const cache = await startTestImageCache();
const dhcpDir = mkdtempSync(join(tmpdir(), 'metalflow-record-site-'));
let h: Harness | undefined;
try {
  h = await startHarness({
    hostOptions: { ...FAST_HOST_OPTIONS, cacheImages: true, imageCacheSites: [SITE], dhcpLeaseCheckSeconds: 0 },
    dhcpSites: { [SITE]: { hostsDir: dhcpDir, leasesFile: join(dhcpDir, 'leases') } },
  });
  const siteWorker = await createSiteCacheWorker({ connection: h.nativeConnection, namespace: 'default', taskQueue: h.taskQueue, site: SITE, cache: cache.served, fetchPolicy: TEST_FETCH_POLICY });
  const running = siteWorker.run();
  try {
    const ref = { namespace: 'replay', name: `cache-site-${Date.now()}` };
    const handle = h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref));
    const settled = (state: string) => async () => {
      const v = await handle.query(hostViewQuery);
      return v.status.provisioning.state === state && !v.currentOperation && v.status.operationalStatus === 'OK' ? v : undefined;
    };
    await h.hosts.put(ref, {
      spec: { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: '52:54:00:10:25:41', online: true, dhcp: { site: SITE, address: '10.254.1.10' } },
      credentials: { username: 'admin', password: 'recorded-password' },
    });
    await waitFor('available', settled('available'), { timeoutMs: 120_000 });
    const checksum = createHash('sha256').update(body).digest('hex');
    await h.hosts.setImage(ref, { url: origin.url('disk.qcow2'), format: 'qcow2', checksum, checksumType: 'sha256' });
    await waitFor('provisioned', settled('provisioned'), { timeoutMs: 120_000 });
    if (cache.cache.downloads !== 1) throw new Error(`the site's cache made ${cache.cache.downloads} downloads, not 1`);
    await h.hosts.remove(ref);
    const { operations } = (await handle.result()) as HostView;
    if (!operations.some((o) => o.kind === 'provision' && o.outcome === 'succeeded')) throw new Error('the host ran no successful provision');
    saveHistory(hostWorkflowId(ref), HOST_FILE);
  } finally {
    siteWorker.shutdown();
    await running;
  }
} finally {
  await h?.close();
  await cache.close();
  await origin.close();
  rmSync(dhcpDir, { recursive: true, force: true });
}
