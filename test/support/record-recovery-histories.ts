/**
 * Records a host that fails, backs off and recovers within one run (no
 * continue-as-new): its registration fails twice (the credentials Secret does
 * not exist yet), the Secret appears, the retry after the backoff succeeds,
 * the host becomes available and is deleted. Saves host-failure-backoff-recovery.json.
 * Never overwrites a fixture. `node --import tsx test/support/record-recovery-histories.ts`
 * on a running test stack.
 */
import { hostViewQuery } from '../../workflows/definitions';
import type { hostWorkflow } from '../../workflows/host';
import { randomMac, startHarness, waitFor } from './harness';
import { assertNewFixtures, saveHistory, startHost } from './record-fixture';

const FILE = 'host-failure-backoff-recovery.json';
assertNewFixtures(FILE);
const h = await startHarness();
try {
  const ref = { namespace: 'replay', name: `recovering-${Date.now()}` };
  const credentialsName = 'replay-late-bmc';
  const spec = { bmc: { address: 'fake://replay', credentialsName }, bootMACAddress: randomMac(), online: true };
  const { id, firstRun } = await startHost(h, ref, spec, { errorBackoffSeconds: 1, maxErrorBackoffSeconds: 4 });
  const handle = h.client.workflow.getHandle<typeof hostWorkflow>(id);
  await waitFor('two failed registrations', async () => (await handle.query(hostViewQuery)).status.errorCount >= 2, { timeoutMs: 120_000 });
  await h.secrets.write(ref.namespace, credentialsName, { username: 'admin', password: 'recorded-password' });
  await waitFor('available after the retry', async () => {
    const v = await handle.query(hostViewQuery);
    return v.status.provisioning.state === 'available' && !v.currentOperation && v.status.errorCount === 0;
  }, { timeoutMs: 120_000 });
  await h.hosts.remove(ref);
  await handle.result();
  if ((await handle.describe()).runId !== firstRun) throw new Error('the host continued as new: this fixture is of one run');
  saveHistory(id, FILE);
} finally {
  await h.close();
}
