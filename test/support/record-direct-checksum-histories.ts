/**
 * Records a `provisioner: direct` host whose live ISO has a sha256 checksum,
 * for the replay test: registered, the ISO booted from virtual media (sushy's
 * system mf-bm-05), deleted. Saves the host's run (operations run inline in it).
 * Recorded before patch `direct-image-verify` (the BMC boots the ISO
 * unchecked: the old shape, argument `before-verify`), after it (`verify`:
 * the ISO read whole before InsertMedia) and with the image cache on
 * (`cache`: patch `image-cache`, the cache verifies), and with user and meta
 * data too (`config-drive`: patch `direct-config-drive`, a config drive in the
 * USB slot, ejected and deleted at the end), and with an address from an
 * IPPool and no data Secret (`pool-network-data`: patch direct-pool-network-data,
 * the drive holds network_data rendered from the pool). Never overwrites a fixture.
 * `node --import tsx test/support/record-direct-checksum-histories.ts <mode>` on a running test stack.
 */
import { createHash } from 'node:crypto';
import { hostWorkflowId } from '../../types/host-ref';
import type { HostSpec } from '../../types/host';
import { hostViewQuery, type HostView } from '../../workflows/definitions';
import type { hostWorkflow } from '../../workflows/host';
import { serveFiles, tinyIso } from '../bmc/support/files';
import { SUSHY_URL } from './env';
import { FAST_HOST_OPTIONS, startHarness, waitFor, type Harness } from './harness';
import { assertNewFixtures, saveHistory } from './record-fixture';
import { resetRedfishSystem } from './redfish-system';

const ADDRESS = `redfish-virtualmedia+${SUSHY_URL}/redfish/v1/Systems/6d660000-0000-4000-8000-000000000005`;
const mode = process.argv[2] ?? 'before-verify';
if (!['before-verify', 'verify', 'cache', 'config-drive', 'pool-network-data'].includes(mode)) {
  throw new Error(`mode ${mode}: give before-verify, verify, cache, config-drive or pool-network-data`);
}
const pooled = mode === 'pool-network-data';
const cached = mode === 'cache' || mode === 'config-drive' || pooled;
const HOST_FILE =
  { 'before-verify': 'host-direct-checksum-before-verify.json', verify: 'host-direct-image-verify.json', cache: 'host-direct-image-cache.json', 'config-drive': 'host-direct-config-drive.json', 'pool-network-data': 'host-direct-pool-network-data.json' }[mode] ?? '';
assertNewFixtures(HOST_FILE);

await resetRedfishSystem(ADDRESS);
const body = tinyIso();
const iso = await serveFiles({ 'live.iso': body });
let h: Harness | undefined;
let stopCache: (() => Promise<void>) | undefined;
try {
  const hostOptions = { ...FAST_HOST_OPTIONS, ...(cached ? { cacheImages: true } : {}) };
  if (cached) {
    const { startTestImageCache } = await import('./image-cache');
    const served = await startTestImageCache();
    stopCache = served.close;
    // The pool host's reservation goes to the cache's folder: no dnsmasq is needed to write it.
    const dhcpSites = pooled ? { r: { hostsDir: served.dir, leasesFile: `${served.dir}/leases` } } : undefined;
    h = await startHarness({ hostOptions: { ...hostOptions, ...(pooled ? { dhcpLeaseCheckSeconds: 0 } : {}) }, imageCache: served.served, configDrives: served.configDrives, ...(dhcpSites ? { dhcpSites } : {}) });
  } else {
    h = await startHarness({ hostOptions });
  }
  const ref = { namespace: 'replay', name: `direct-sum-${Date.now()}` };
  const handle = h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref));
  const settled = (state: string) => async () => {
    const v = await handle.query(hostViewQuery);
    return v.status.provisioning.state === state && !v.currentOperation && v.status.operationalStatus === 'OK' ? v : undefined;
  };
  const pool = { namespace: 'replay', name: `direct-pool-${Date.now()}` };
  if (pooled) {
    const { IpPools } = await import('../../clients/temporal/ip-pools');
    await new IpPools({ client: h.client, taskQueue: h.taskQueue }).apply(pool, { namePrefix: 'r', pools: [{ start: '10.254.0.10', end: '10.254.0.19' }], prefix: 24, gateway: '10.254.0.1', dnsServers: ['10.254.0.53'] });
  }
  const spec: HostSpec = {
    bmc: { address: ADDRESS, credentialsName: 'replay-direct-sum-bmc' },
    online: true,
    provisioner: 'direct',
    ...(pooled ? { bootMACAddress: '52:54:00:10:25:40', dhcp: { site: 'r', ipPool: { name: pool.name } } } : {}),
  };
  const userData = mode === 'config-drive' ? { userData: '#cloud-config\n', metaData: 'role: recorded\n' } : {};
  await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'password' }, ...userData });
  await waitFor('available', settled('available'), { timeoutMs: 120_000 });
  const checksum = createHash('sha256').update(body).digest('hex');
  await h.hosts.setImage(ref, { url: iso.url('live.iso'), format: 'live-iso', checksum, checksumType: 'sha256' });
  await waitFor('provisioned', settled('provisioned'), { timeoutMs: 120_000 });
  await h.hosts.remove(ref);
  const { operations } = (await handle.result()) as HostView;
  if (!operations.some((o) => o.kind === 'provision' && o.outcome === 'succeeded')) throw new Error('the direct host ran no successful provision');
  saveHistory(hostWorkflowId(ref), HOST_FILE);
} finally {
  await h?.close();
  await stopCache?.();
  await iso.close();
}
