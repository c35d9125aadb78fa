/**
 * Records a host with the image check (patch image-probe, host option
 * probeImages) for the replay test: an image that is not found (a
 * provisioning error, the host left available), then a fixed image whose
 * checksum-file URL is resolved, provisioned, deprovisioned and deleted.
 * Never overwrites a fixture.
 * `node --import tsx test/support/record-image-histories.ts` on a running test stack.
 */
import { createHash } from 'node:crypto';
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery, type HostView } from '../../workflows/definitions';
import { FAST_HOST_OPTIONS, randomMac, startHarness, waitFor } from './harness';
import { assertNewFixtures, saveHistory } from './record-fixture';
import { imageBytes } from './image-bytes';
import { startImageServer } from './image-server';

const FILE = 'host-image-probe.json';
assertNewFixtures(FILE);
const QCOW2 = imageBytes.qcow2();
const web = await startImageServer({
  '/images/disk.qcow2': { body: QCOW2 },
  '/images/SHA256SUMS': { body: `${createHash('sha256').update(QCOW2).digest('hex')}  disk.qcow2\n` },
});
const h = await startHarness({ hostOptions: { ...FAST_HOST_OPTIONS, probeImages: true } });
try {
  const ref = { namespace: 'replay', name: `image-probe-${Date.now()}` };
  const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
  const view = async (): Promise<HostView> => handle.query(hostViewQuery);
  await h.hosts.put(ref, {
    spec: { bmc: { address: 'fake://replay', credentialsName: 'replay-bmc' }, bootMACAddress: randomMac(), online: true },
    credentials: { username: 'admin', password: 'recorded-password' },
  });
  await waitFor('available', async () => (await view()).status.provisioning.state === 'available');
  await h.hosts.setImage(ref, { url: web.url('/images/missing.qcow2'), checksum: web.url('/images/SHA256SUMS'), format: 'qcow2' });
  await waitFor('the image check failed', async () => (await view()).status.errorMessage.startsWith('image check failed'));
  await h.hosts.setImage(ref, { url: web.url('/images/disk.qcow2'), checksum: web.url('/images/SHA256SUMS'), format: 'qcow2' });
  await waitFor('provisioned', async () => (await view()).status.provisioning.state === 'provisioned');
  await h.hosts.setImage(ref, null);
  await waitFor('available again', async () => (await view()).status.provisioning.state === 'available');
  await h.hosts.remove(ref);
  await handle.result();
  saveHistory(hostWorkflowId(ref), FILE);
} finally {
  await h.close();
  await web.close();
}
