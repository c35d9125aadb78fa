/**
 * Records a fleet operation added after the first ones for the replay test,
 * with the workflow code of this tree bundled as it is, over one available
 * fake-hardware host. `clean` (patch `fleet-clean`): `old` (run it on a tree
 * before the patch) a clean input, which that code refused as invalid
 * (`fleet-clean-refused-v1.json`); `new` a clean fleet (a bios step)
 * (`fleet-clean-v1.json`). `remediate` (patch `fleet-remediate`): the same
 * pair (`fleet-remediate-refused-v1.json`, `fleet-remediate-v1.json`: CAPM3's
 * reboot strategy, API mode: the host's power cycle). Never overwrites a fixture.
 * `node --import tsx test/support/record-fleet-operation-histories.ts old|new [clean|remediate]` on a running test stack.
 */
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import type { FleetInput } from '../../types/fleet';
import { fleetWorkflowId } from '../../workflows/fleet-definitions';
import type { fleetWorkflow } from '../../workflows/fleet';
import { FAST_HOST_OPTIONS, startHarness } from './harness';
import { assertNewFixtures, availableFakeHost, saveHistory } from './record-fixture';

const OPERATIONS: Record<string, Record<string, unknown>> = {
  clean: { kind: 'clean', steps: [{ name: 'bios', settings: { BootMode: 'Uefi' } }] },
  remediate: { kind: 'remediate', strategy: { type: 'Reboot' } },
};
const [shape, kind = 'clean'] = process.argv.slice(2);
const operation = OPERATIONS[kind];
if ((shape !== 'old' && shape !== 'new') || !operation) throw new Error('usage: record-fleet-operation-histories.ts old|new [clean|remediate]');
const file = shape === 'old' ? `fleet-${kind}-refused-v1.json` : `fleet-${kind}-v1.json`;
assertNewFixtures(file);

const stamp = Date.now();
const ns = `replay-fleet-${kind}-${stamp}`;
const { code } = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
const h = await startHarness({ hostOptions: FAST_HOST_OPTIONS, workflowCode: code });
try {
  await availableFakeHost(h, { namespace: ns, name: `${kind}-a` }, `replay-${kind}-${stamp}`);
  // Cast: the old tree's input type has no such kind (that is what is recorded).
  const input = { name: `replay-${kind}-${stamp}`, operation, selector: { namespace: ns } } as unknown as FleetInput;
  const handle = await h.client.workflow.start<typeof fleetWorkflow>('fleetWorkflow', { workflowId: fleetWorkflowId(input.name), taskQueue: h.taskQueue, args: [input] });
  const outcome = await handle.result().then(
    (p) => `${p.phase} ${JSON.stringify(p.counts)}`,
    (err: unknown) => `failed: ${err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err)}`,
  );
  console.log(`${kind}: ${outcome}`);
  saveHistory(handle.workflowId, file);
} finally {
  await h.close();
}
