/**
 * Records fleet operations reinspect, detach and attach for the replay test
 * (patch `fleet-inspect-detach`), with the workflow code of this tree bundled
 * as it is. `old` (run it on a tree before the patch): a reinspect input,
 * which that code refused as invalid (`fleet-reinspect-refused-v1.json`).
 * `new`: a reinspect, a detach and an attach fleet over one available host
 * (`fleet-reinspect-v1.json`, `fleet-detach-v1.json`, `fleet-attach-v1.json`).
 * Never overwrites a fixture.
 * `node --import tsx test/support/record-fleet-inspect-detach-histories.ts old|new` on a running test stack.
 */
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import type { FleetInput } from '../../types/fleet';
import { fleetWorkflowId } from '../../workflows/fleet-definitions';
import type { fleetWorkflow } from '../../workflows/fleet';
import { FAST_HOST_OPTIONS, startHarness } from './harness';
import { assertNewFixtures, availableFakeHost, saveHistory } from './record-fixture';

const shape = process.argv[2];
if (shape !== 'old' && shape !== 'new') throw new Error('usage: record-fleet-inspect-detach-histories.ts old|new');
const kinds = shape === 'old' ? ['reinspect'] : ['reinspect', 'detach', 'attach'];
const file = (kind: string) => (shape === 'old' ? `fleet-${kind}-refused-v1.json` : `fleet-${kind}-v1.json`);
assertNewFixtures(...kinds.map(file));

const stamp = Date.now();
const ns = `replay-fleet-inspect-${stamp}`;
const { code } = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
const h = await startHarness({ hostOptions: FAST_HOST_OPTIONS, workflowCode: code });
try {
  await availableFakeHost(h, { namespace: ns, name: 'inspect-a' }, `replay-inspect-${stamp}`);
  for (const kind of kinds) {
    // Cast: the old tree's input type has no such kind (that is what is recorded).
    const input = { name: `replay-${kind}-${stamp}`, operation: { kind }, selector: { namespace: ns } } as unknown as FleetInput;
    const handle = await h.client.workflow.start<typeof fleetWorkflow>('fleetWorkflow', { workflowId: fleetWorkflowId(input.name), taskQueue: h.taskQueue, args: [input] });
    const outcome = await handle.result().then(
      (p) => `${p.phase} ${JSON.stringify(p.counts)}`,
      (err: unknown) => `failed: ${err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err)}`,
    );
    console.log(`${kind}: ${outcome}`);
    saveHistory(handle.workflowId, file(kind));
  }
} finally {
  await h.close();
}
