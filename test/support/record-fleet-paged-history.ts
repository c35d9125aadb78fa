/**
 * Records, for the replay test, a reboot fleet whose progress is over its (lowered) size limit
 * (patch fleet-bounded-results): its pause and resume updates and its result are the progress's
 * first page (`fleet-reboot-paged-results.json`). The old shape is every fleet fixture before it:
 * a progress under the limit never asks for the patch, and a larger one could not be recorded
 * (the server refused it). Never overwrites a fixture.
 * `node --import tsx test/support/record-fleet-paged-history.ts` on a running test stack.
 */
import { fleetProgressQuery, fleetWorkflowId, pauseFleetUpdate, resumeFleetUpdate } from '../../workflows/fleet-definitions';
import type { fleetWorkflow } from '../../workflows/fleet';
import { assertNewFixtures, saveHistory } from './record-fixture';
import { FAST_HOST_OPTIONS, randomMac, startHarness, waitFor } from './harness';

const file = 'fleet-reboot-paged-results.json';
assertNewFixtures(file);
const stamp = Date.now();
const ns = `replay-paged-${stamp}`;
const h = await startHarness({ hostOptions: FAST_HOST_OPTIONS });
try {
  await Promise.all(
    ['a', 'b', 'c'].map(async (x) => {
      const ref = { namespace: ns, name: `paged-${x}` };
      await h.hosts.put(ref, {
        spec: { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true },
        credentials: { username: 'admin', password: 'pw' },
      });
      await waitFor(`${ref.name} available`, async () => {
        const v = await h.hosts.get(ref);
        return v.status.provisioning.state === 'available' && !v.currentOperation;
      }, { timeoutMs: 240_000 });
    }),
  );
  const name = `replay-paged-${stamp}`;
  const fleet = await h.client.workflow.start<typeof fleetWorkflow>('fleetWorkflow', {
    workflowId: fleetWorkflowId(name),
    taskQueue: h.taskQueue,
    args: [{ name, operation: { kind: 'reboot' }, selector: { namespace: ns }, maxConcurrent: 1 }, { options: { progressLimitBytes: 1000 } }],
  });
  await waitFor('selected', async () => (await fleet.query(fleetProgressQuery)).selected === 3, { timeoutMs: 60_000 });
  const paused = await fleet.executeUpdate(pauseFleetUpdate, { args: [{ reason: 'recording' }] });
  if (!paused.page) throw new Error('the pause did not answer a page');
  await fleet.executeUpdate(resumeFleetUpdate);
  const done = await fleet.result();
  if (!done.page) throw new Error('the result is not a page');
  saveHistory(fleet.workflowId, file);
} finally {
  await h.close();
}
