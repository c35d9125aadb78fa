/**
 * Records a keyed power-off request on a host with spec.disablePowerOff, for
 * the replay test (patch `disable-power-off-reboot`). `old`: the workflow code
 * of this tree bundled as it is (run it on a tree before the patch): the
 * request is refused by the update's validator (nothing in the history). `new`:
 * it is kept and the host rebooted once. Then the host is deleted. Never
 * overwrites a fixture.
 * `node --import tsx test/support/record-disable-power-off-reboot-histories.ts old|new` on a running test stack.
 */
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { applySpecUpdate, hostViewQuery } from '../../workflows/definitions';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import { FAST_HOST_OPTIONS, startHarness, waitFor } from './harness';
import { assertNewFixtures, availableFakeHost, deleteAndSave } from './record-fixture';

const shape = process.argv[2];
if (shape !== 'old' && shape !== 'new') throw new Error('usage: record-disable-power-off-reboot-histories.ts old|new');
const FILE = shape === 'old' ? 'host-disable-power-off-key-refused-v1.json' : 'host-disable-power-off-key-reboots.json';
assertNewFixtures(FILE);
const { code } = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
const h = await startHarness({ hostOptions: FAST_HOST_OPTIONS, workflowCode: code });
try {
  const ref = { namespace: 'replay', name: `no-power-off-key-${Date.now()}` };
  const { handle } = await availableFakeHost(h, ref, 'replay-no-power-off-key');
  const { spec } = await handle.query(hostViewQuery);
  await handle.executeUpdate(applySpecUpdate, { args: [{ ...spec!, disablePowerOff: true }] });
  const refused = await h.hosts.holdPowerOff(ref, 'capm3', 'hard').then(() => false, () => true);
  if (refused !== (shape === 'old')) throw new Error(`the keyed request was ${refused ? 'refused' : 'accepted'}: not the ${shape} shape`);
  await waitFor('idle', async () => {
    const v = await handle.query(hostViewQuery);
    return !v.currentOperation && v.operations.filter((o) => o.kind === 'reboot').length === (shape === 'new' ? 1 : 0);
  }, { timeoutMs: 120_000 });
  await deleteAndSave(h, ref, FILE);
} finally {
  await h.close();
}
