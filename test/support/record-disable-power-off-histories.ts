/**
 * Records an available host given spec.disablePowerOff, for the replay test
 * (patch `disable-power-off-node`). `old`: the workflow code of this tree
 * bundled as it is (run it on a tree before the patch): nothing happens on
 * the node. `new`: the host registers again (the node's disable_power_off
 * set). Then the host is deleted. Never overwrites a fixture.
 * `node --import tsx test/support/record-disable-power-off-histories.ts old|new` on a running test stack.
 */
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { applySpecUpdate, hostViewQuery } from '../../workflows/definitions';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import { FAST_HOST_OPTIONS, startHarness, waitFor } from './harness';
import { assertNewFixtures, availableFakeHost, deleteAndSave } from './record-fixture';

const shape = process.argv[2];
if (shape !== 'old' && shape !== 'new') throw new Error('usage: record-disable-power-off-histories.ts old|new');
const FILE = shape === 'old' ? 'host-disable-power-off-workflow-only-v1.json' : 'host-disable-power-off-on-node.json';
assertNewFixtures(FILE);
const { code } = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
const h = await startHarness({ hostOptions: FAST_HOST_OPTIONS, workflowCode: code });
try {
  const ref = { namespace: 'replay', name: `disable-power-off-${Date.now()}` };
  const { handle } = await availableFakeHost(h, ref, 'replay-disable-power-off');
  const { spec } = await handle.query(hostViewQuery);
  const { generation } = await handle.executeUpdate(applySpecUpdate, { args: [{ ...spec!, disablePowerOff: true }] });
  const enrolled = shape === 'new' ? 2 : 1;
  await waitFor('the update handled', async () => {
    const v = await handle.query(hostViewQuery);
    return v.generation >= generation && !v.currentOperation && v.operations.filter((o) => o.kind === 'enroll').length === enrolled;
  }, { timeoutMs: 120_000 });
  await deleteAndSave(h, ref, FILE);
} finally {
  await h.close();
}
