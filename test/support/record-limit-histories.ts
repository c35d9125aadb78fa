/**
 * Records the provisioning limit's shapes for the replay test (patch
 * provisioning-limit): a worker with a limit of 1 and two hosts given an image
 * at once, so one waits `delayed` for the other's permit at each step; both
 * provisioned, deprovisioned and deleted. Saves the host that waited first and
 * the limiter's run. Never overwrites a fixture.
 * `node --import tsx test/support/record-limit-histories.ts [suffix]` on a running test stack; a suffix
 * (e.g. `-fewer-events`: the permit asked by a local activity) records a later shape into new files.
 * (The shape before the patch, host-lifecycle-before-provisioning-limit.json, is
 * record-histories.ts run on the code before it.)
 */
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery, type HostView } from '../../workflows/definitions';
import { limiterWorkflowId } from '../../workflows/limiter-definitions';
import { randomMac, startHarness, waitFor } from './harness';
import { assertNewFixtures, saveHistory } from './record-fixture';

const suffix = process.argv[2] ?? '';
const HOST = `host-provisioning-limit-delayed${suffix}.json`;
const LIMITER = `provisioning-limiter${suffix}.json`;
assertNewFixtures(HOST, LIMITER);
const h = await startHarness({ provisioningLimit: 1 });
try {
  const refs = [0, 1].map((i) => ({ namespace: 'replay', name: `limit-${i}-${Date.now()}` }));
  const view = (ref: (typeof refs)[number]): Promise<HostView> => h.client.workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery);
  const image = { url: 'http://127.0.0.1/replay.qcow2', checksum: 'f'.repeat(64), format: 'qcow2' as const };
  await Promise.all(
    refs.map((ref) =>
      h.hosts.put(ref, {
        spec: { bmc: { address: 'fake://replay', credentialsName: 'replay-bmc' }, bootMACAddress: randomMac(), online: true, image },
        credentials: { username: 'admin', password: 'recorded-password' },
      }),
    ),
  );
  await waitFor('both provisioned', async () => (await Promise.all(refs.map(view))).every((v) => v.status.provisioning.state === 'provisioned'), { timeoutMs: 180_000 });
  await Promise.all(refs.map((ref) => h.hosts.setImage(ref, null)));
  await waitFor('both available', async () => (await Promise.all(refs.map(view))).every((v) => v.status.provisioning.state === 'available'), { timeoutMs: 180_000 });
  const views = await Promise.all(refs.map(view));
  const waited = views.find((v) => v.operations.some((r) => r.delayedSince));
  if (!waited) throw new Error('neither host waited for a permit: nothing to record');
  await Promise.all(refs.map((ref) => h.hosts.remove(ref)));
  await Promise.all(refs.map((ref) => h.client.workflow.getHandle(hostWorkflowId(ref)).result()));
  saveHistory(hostWorkflowId(waited.ref), HOST);
  saveHistory(limiterWorkflowId(h.taskQueue), LIMITER);
} finally {
  await h.close();
}
