/**
 * Records a provisioned host given an image with another URL, for the replay
 * test (patch `metal3-transitions`). `old`: the workflow code of this tree
 * bundled as it is (run it on a tree before the patch): the new URL is
 * ignored, the image is then removed (deprovisioned) and the host deleted.
 * `new`: the new URL deprovisions and provisions the host again with it, then
 * the host is deleted. Never overwrites a fixture.
 * `node --import tsx test/support/record-metal3-transitions-histories.ts old|new` on a running test stack.
 */
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery, type HostView } from '../../workflows/definitions';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import { FAST_HOST_OPTIONS, startHarness, waitFor } from './harness';
import { assertNewFixtures, availableFakeHost, saveHistory } from './record-fixture';

const shape = process.argv[2];
if (shape !== 'old' && shape !== 'new') throw new Error('usage: record-metal3-transitions-histories.ts old|new');
const FILE = shape === 'old' ? 'host-image-url-change-ignored-v1.json' : 'host-image-url-change-reprovisions.json';
assertNewFixtures(FILE);
const image = (name: string) => ({ url: `http://127.0.0.1/images/${name}.qcow2`, checksum: 'e'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const });
const { code } = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
const h = await startHarness({ hostOptions: FAST_HOST_OPTIONS, workflowCode: code });
try {
  const ref = { namespace: 'replay', name: `image-change-${Date.now()}` };
  const { handle } = await availableFakeHost(h, ref, 'replay-image-change');
  const idleIn = (state: string, more: (v: HostView) => boolean = () => true) =>
    waitFor(state, async () => {
      const v = await handle.query(hostViewQuery);
      return v.status.provisioning.state === state && !v.currentOperation && more(v) ? v : undefined;
    }, { timeoutMs: 120_000 });
  await h.hosts.setImage(ref, image('first'));
  await idleIn('provisioned');
  await h.hosts.setImage(ref, image('second'));
  if (shape === 'new') {
    await idleIn('provisioned', (v) => v.status.provisioning.image?.url === image('second').url);
  } else {
    // Ignored before the patch: still provisioned with the first image once the update is in.
    const v = await idleIn('provisioned', (x) => x.spec?.image?.url === image('second').url);
    if (v.status.provisioning.image?.url !== image('first').url) throw new Error(`expected the first image to stay, got ${v.status.provisioning.image?.url}`);
    await h.hosts.setImage(ref, null);
    await idleIn('available');
  }
  await h.hosts.remove(ref);
  const { operations } = await handle.result();
  saveHistory(hostWorkflowId(ref), FILE);
  console.log(`${FILE}: ${operations.map((o) => `${o.kind}:${o.outcome}`).join(' ')}`);
} finally {
  await h.close();
}
