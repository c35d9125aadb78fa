/**
 * Records the fleet operation clean for the replay test (patch `fleet-clean`),
 * with the workflow code of this tree bundled as it is. `old` (run it on a
 * tree before the patch): a clean input, which that code refused as invalid
 * (`fleet-clean-refused-v1.json`). `new`: a clean fleet (a bios step) over one
 * available fake-hardware host (`fleet-clean-v1.json`). Never overwrites a fixture.
 * `node --import tsx test/support/record-fleet-clean-histories.ts old|new` on a running test stack.
 */
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import type { FleetInput } from '../../types/fleet';
import { fleetWorkflowId } from '../../workflows/fleet-definitions';
import type { fleetWorkflow } from '../../workflows/fleet';
import { FAST_HOST_OPTIONS, startHarness } from './harness';
import { assertNewFixtures, availableFakeHost, saveHistory } from './record-fixture';

const shape = process.argv[2];
if (shape !== 'old' && shape !== 'new') throw new Error('usage: record-fleet-clean-histories.ts old|new');
const file = shape === 'old' ? 'fleet-clean-refused-v1.json' : 'fleet-clean-v1.json';
assertNewFixtures(file);

const stamp = Date.now();
const ns = `replay-fleet-clean-${stamp}`;
const { code } = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
const h = await startHarness({ hostOptions: FAST_HOST_OPTIONS, workflowCode: code });
try {
  await availableFakeHost(h, { namespace: ns, name: 'clean-a' }, `replay-clean-${stamp}`);
  // Cast: the old tree's input type has no such kind (that is what is recorded).
  const input = { name: `replay-clean-${stamp}`, operation: { kind: 'clean', steps: [{ name: 'bios', settings: { BootMode: 'Uefi' } }] }, selector: { namespace: ns } } as unknown as FleetInput;
  const handle = await h.client.workflow.start<typeof fleetWorkflow>('fleetWorkflow', { workflowId: fleetWorkflowId(input.name), taskQueue: h.taskQueue, args: [input] });
  const outcome = await handle.result().then(
    (p) => `${p.phase} ${JSON.stringify(p.counts)}`,
    (err: unknown) => `failed: ${err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err)}`,
  );
  console.log(`clean: ${outcome}`);
  saveHistory(handle.workflowId, file);
} finally {
  await h.close();
}
