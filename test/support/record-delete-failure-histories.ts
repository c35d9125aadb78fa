/**
 * Records a delete that fails and then succeeds, for the replay test: Ironic
 * (through the fault proxy, test/support/ironic-proxy.ts) refuses the first
 * request to delete the host's node with a 400, the delete operation fails,
 * the host records the error, backs off and deletes on the retry. Saves the
 * host's run and the failed delete. Never overwrites a fixture.
 * `node --import tsx test/support/record-delete-failure-histories.ts` on a
 * running test stack.
 */
import { hostWorkflowId } from '../../types/host-ref';
import { IRONIC_URL } from './env';
import { FAST_HOST_OPTIONS, startHarness } from './harness';
import { IronicProxy } from './ironic-proxy';
import { assertNewFixtures, availableFakeHost, saveHistory, saveOperationHistory } from './record-fixture';

const FILES = { host: 'host-delete-failed-then-deleted.json', failed: 'operation-delete-failed.json' };
assertNewFixtures(...Object.values(FILES));
const proxy = new IronicProxy(IRONIC_URL);
await proxy.start();
const h = await startHarness({ ironicUrl: proxy.url, hostOptions: FAST_HOST_OPTIONS });
try {
  const ref = { namespace: 'replay', name: `delete-retried-${Date.now()}` };
  const { handle, nodeId } = await availableFakeHost(h, ref, 'replay-delete');
  proxy.fail((r) => r.method === 'DELETE' && r.path.split('?')[0] === `/v1/nodes/${nodeId}`, 1, 400, 'refused once by the history recorder');
  await h.hosts.remove(ref);
  const { operations } = await handle.result();
  const failed = operations.find((o) => o.kind === 'delete' && o.outcome === 'failed');
  if (!failed || operations.at(-1)?.kind !== 'delete') throw new Error('no failed delete followed by a successful one');
  saveHistory(hostWorkflowId(ref), FILES.host);
  saveOperationHistory(failed, FILES.failed);
} finally {
  await h.close();
  await proxy.stop();
}
