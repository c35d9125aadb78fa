/**
 * Records a delete whose power off keeps failing, for the replay test: Ironic
 * (through the fault proxy) refuses the host's power requests with a 400.
 * `old`: the workflow code of this tree bundled as it is (run it on a tree
 * before patch `delete-gives-up`): the failures are retried until the proxy
 * stops refusing after 6, then the host is deleted. `new`: the host gives up
 * on the power off after Metal3's retry count and is deleted anyway.
 * Never overwrites a fixture.
 * `node --import tsx test/support/record-delete-gives-up-histories.ts old|new` on a running test stack.
 */
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { hostWorkflowId } from '../../types/host-ref';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import { IRONIC_URL } from './env';
import { FAST_HOST_OPTIONS, startHarness } from './harness';
import { IronicProxy } from './ironic-proxy';
import { assertNewFixtures, availableFakeHost, saveHistory } from './record-fixture';

const shape = process.argv[2];
if (shape !== 'old' && shape !== 'new') throw new Error('usage: record-delete-gives-up-histories.ts old|new');
const FILE = shape === 'old' ? 'host-delete-power-off-retried-v1.json' : 'host-delete-gives-up.json';
assertNewFixtures(FILE);
const { code } = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
const proxy = new IronicProxy(IRONIC_URL);
await proxy.start();
const h = await startHarness({ ironicUrl: proxy.url, hostOptions: FAST_HOST_OPTIONS, workflowCode: code });
try {
  const ref = { namespace: 'replay', name: `delete-gives-up-${Date.now()}` };
  const { handle, nodeId } = await availableFakeHost(h, ref, 'replay-delete-gives-up');
  proxy.fail((r) => r.method === 'PUT' && r.path.split('?')[0] === `/v1/nodes/${nodeId}/states/power`, 6, 400, 'refused by the history recorder');
  await h.hosts.remove(ref);
  const { operations } = await handle.result();
  const failedPowerOffs = operations.filter((o) => o.kind === 'power' && o.outcome === 'failed').length;
  if (failedPowerOffs < 4 || operations.at(-1)?.kind !== 'delete') throw new Error(`expected 4+ failed power offs then a delete, got ${operations.map((o) => `${o.kind}:${o.outcome}`).join(' ')}`);
  saveHistory(hostWorkflowId(ref), FILE);
  console.log(`${FILE}: ${failedPowerOffs} failed power offs, then ${operations.at(-1)!.kind}`);
} finally {
  await h.close();
  await proxy.stop();
}
