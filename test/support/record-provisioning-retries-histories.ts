/**
 * Records a host whose deploy fails, for the replay test (patch
 * `provisioning-fail-count`). The deploy fails at once (its user-data Secret
 * does not exist). `old`: the workflow code of this tree bundled as it is (run
 * it on a tree before the patch): the deploy is retried in `provisioning`
 * until the image is removed (deprovisioned), then the host is deleted.
 * `new`: the failed deploy deprovisions (provisioningFailCount 1), the host is
 * back in `available` and stops there at the retry limit (1 here); then it is
 * deleted. Never overwrites a fixture.
 * `node --import tsx test/support/record-provisioning-retries-histories.ts old|new` on a running test stack.
 */
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { hostWorkflowId } from '../../types/host-ref';
import { applySpecUpdate, hostViewQuery, type HostView } from '../../workflows/definitions';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import { FAST_HOST_OPTIONS, randomMac, startHarness, waitFor } from './harness';
import { assertNewFixtures, deleteAndSave } from './record-fixture';

const shape = process.argv[2];
if (shape !== 'old' && shape !== 'new') throw new Error('usage: record-provisioning-retries-histories.ts old|new');
const FILE = shape === 'old' ? 'host-failed-deploy-retried-in-place-v1.json' : 'host-failed-deploy-deprovisions-retry-limit.json';
assertNewFixtures(FILE);
const { code } = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
const h = await startHarness({ hostOptions: { ...FAST_HOST_OPTIONS, maxProvisioningRetries: 1 }, workflowCode: code });
try {
  const ref = { namespace: 'replay', name: `failed-deploy-${Date.now()}` };
  const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
  const spec = { bmc: { address: 'fake://replay-failed-deploy', credentialsName: 'replay-failed-deploy-bmc' }, bootMACAddress: randomMac(), online: true };
  const credentials = { username: 'admin', password: 'recorded-password' };
  const until = (what: string, ok: (v: HostView) => boolean) =>
    waitFor(what, async () => {
      const v = await handle.query(hostViewQuery);
      return ok(v) ? v : undefined;
    }, { timeoutMs: 120_000 });
  await h.hosts.put(ref, { spec, credentials });
  await until('available', (v) => v.status.provisioning.state === 'available' && !v.currentOperation);
  const image = { url: 'http://127.0.0.1/images/fails.qcow2', checksum: 'f'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };
  // Straight to the workflow: the API would refuse a user-data Secret that does not exist.
  await handle.executeUpdate(applySpecUpdate, { args: [{ ...spec, image, userData: { name: 'replay-missing-user-data' } }] });
  if (shape === 'new') {
    await until('the retry limit', (v) => v.status.errorMessage.includes('retry limit') && !v.currentOperation);
  } else {
    await until('two failed deploys', (v) => v.operations.filter((o) => o.kind === 'provision' && o.outcome === 'failed').length >= 2);
    await h.hosts.setImage(ref, null);
    await until('available again', (v) => v.status.provisioning.state === 'available' && !v.currentOperation);
  }
  await deleteAndSave(h, ref, FILE);
} finally {
  await h.close();
}
