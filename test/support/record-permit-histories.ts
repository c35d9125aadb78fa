/**
 * Records a host that waits long for a provisioning permit while updates
 * arrive, for the replay test (patch permit-continue-as-new; the scenario is
 * permit-wait.ts, its host history threshold set low). `old`: the workflow
 * code of this tree bundled as it is (run it on a tree before the patch): the
 * host waits in one run, its history past the threshold. `new`: it continues
 * as new while it waits; its first run, the run the grant came to and the
 * limiter's run are saved. Either way the host then gets the permit, provisions and is deleted.
 * Never overwrites a fixture.
 * `node --import tsx test/support/record-permit-histories.ts old|new` on a running test stack.
 */
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { hostWorkflowId } from '../../types/host-ref';
import { limiterWorkflowId } from '../../workflows/limiter-definitions';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import { IRONIC_URL } from './env';
import { IronicProxy } from './ironic-proxy';
import { FAST_HOST_OPTIONS, startHarness, waitFor } from './harness';
import { hostWaitingThroughUpdates } from './permit-wait';
import { assertNewFixtures, saveHistory } from './record-fixture';

const shape = process.argv[2];
if (shape !== 'old' && shape !== 'new') throw new Error('usage: record-permit-histories.ts old|new');
const FILES =
  shape === 'old'
    ? { waiter: 'host-permit-long-wait-before-continue-as-new.json' }
    : { waiter: 'host-permit-wait-continued-run1.json', granted: 'host-permit-wait-continued-granted.json', limiter: 'provisioning-limiter-continued-holder.json' };
assertNewFixtures(...Object.values(FILES));
const { code } = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
const proxy = new IronicProxy(IRONIC_URL);
await proxy.start();
const h = await startHarness({ ironicUrl: proxy.url, provisioningLimit: 1, hostOptions: { ...FAST_HOST_OPTIONS, maxHistoryEvents: 40 }, workflowCode: code });
try {
  const w = await hostWaitingThroughUpdates(h, proxy, `replay-${Date.now()}`, 12);
  const handle = h.client.workflow.getHandle(hostWorkflowId(w.waiter));
  const waited = await handle.describe();
  if ((shape === 'new') !== (waited.runId !== w.firstRun)) throw new Error(`shape ${shape}: the waiter's run is ${waited.runId}, it began to wait in ${w.firstRun}`);
  w.unblock();
  await waitFor(
    'both provisioned',
    async () => (await Promise.all([w.view(w.holder), w.view(w.waiter)])).every((v) => v.status.provisioning.state === 'provisioned' && !v.currentOperation),
    { timeoutMs: 180_000 },
  );
  await Promise.all([w.holder, w.waiter].map((ref) => h.hosts.remove(ref)));
  await Promise.all([w.holder, w.waiter].map((ref) => h.client.workflow.getHandle(hostWorkflowId(ref)).result()));
  if (shape === 'old') {
    saveHistory(hostWorkflowId(w.waiter), FILES.waiter, w.firstRun);
  } else {
    saveHistory(hostWorkflowId(w.waiter), FILES.waiter, w.firstRun);
    saveHistory(hostWorkflowId(w.waiter), FILES.granted!, waited.runId);
    saveHistory(limiterWorkflowId(h.taskQueue), FILES.limiter!);
  }
} finally {
  await h.close();
  await proxy.stop();
}
