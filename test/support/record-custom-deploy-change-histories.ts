/**
 * Records a provisioned custom-deploy host whose method changes, for the
 * replay test (patch `custom-deploy-change`). `old`: the workflow code of this
 * tree bundled as it is (run it on a tree before the patch, with
 * test/support/deployed-node.ts copied in): the new method is ignored; the
 * method is then removed (deprovisioned) and the host deleted. `new`: the new
 * method deprovisions the host and provisions it again (waiting for the
 * agent), then the host is deleted. Never overwrites a fixture.
 * `node --import tsx test/support/record-custom-deploy-change-histories.ts old|new` on a running test stack.
 */
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { applySpecUpdate } from '../../workflows/definitions';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import { adoptedCustomDeployHost } from './deployed-node';
import { FAST_HOST_OPTIONS, startHarness } from './harness';
import { assertNewFixtures, deleteAndSave } from './record-fixture';

const shape = process.argv[2];
if (shape !== 'old' && shape !== 'new') throw new Error('usage: record-custom-deploy-change-histories.ts old|new');
const FILE = shape === 'old' ? 'host-custom-deploy-change-ignored-v1.json' : 'host-custom-deploy-change-reprovisions.json';
assertNewFixtures(FILE);
const { code } = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
const h = await startHarness({ hostOptions: FAST_HOST_OPTIONS, workflowCode: code });
try {
  const ref = { namespace: 'replay', name: `custom-change-${Date.now()}` };
  const { spec, handle, until } = await adoptedCustomDeployHost(h, ref, 'install_a', FAST_HOST_OPTIONS);
  const changed = await handle.executeUpdate(applySpecUpdate, { args: [{ ...spec, customDeploy: { method: 'install_b' } }] });
  if (shape === 'new') {
    await until('provisioning with the new method', (v) => v.currentOperation?.kind === 'provision');
  } else {
    // Ignored before the patch: still provisioned with the first method once the update is in.
    await until('the update in', (v) => v.generation >= changed.generation && !v.currentOperation && v.status.provisioning.state === 'provisioned');
    const { customDeploy: _removed, ...withoutMethod } = spec;
    await handle.executeUpdate(applySpecUpdate, { args: [withoutMethod] });
    await until('available', (v) => v.status.provisioning.state === 'available' && !v.currentOperation);
  }
  await deleteAndSave(h, ref, FILE);
} finally {
  await h.close();
}
