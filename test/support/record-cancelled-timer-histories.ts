/**
 * Records, for the replay test, an idle host whose idle timer is cancelled by
 * operations (reboots) until it hands over to a fresh run by its own count
 * (era fire-fence counts a timer's events when it fires, none when it is
 * cancelled: history-count.ts): `host-cancelled-timers<suffix>-run1.json`, the
 * run that continued as new. A change to what the count takes moves the
 * hand-over and fails that replay. Never overwrites a fixture.
 * `node --import tsx test/support/record-cancelled-timer-histories.ts -<patch id>` on a running test stack.
 */
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery } from '../../workflows/definitions';
import { randomMac, startHarness, waitFor } from './harness';
import { assertNewFixtures, saveHistory } from './record-fixture';

const suffix = process.argv[2] ?? '';
const FILE = `host-cancelled-timers${suffix}-run1.json`;
assertNewFixtures(FILE);
const h = await startHarness({ hostOptions: { powerCheckSeconds: 30, maxHistoryEvents: 100 } });
try {
  const ref = { namespace: 'replay', name: `timers-${Date.now()}` };
  const id = hostWorkflowId(ref);
  const handle = h.client.workflow.getHandle(id);
  await h.hosts.put(ref, {
    spec: { bmc: { address: 'fake://replay-timers', credentialsName: 'replay-timers-bmc' }, bootMACAddress: randomMac(), online: true },
    credentials: { username: 'admin', password: 'recorded-password' },
  });
  const firstRun = (await handle.describe()).runId;
  const view = () => handle.query(hostViewQuery);
  await waitFor('available and idle', async () => {
    const v = await view();
    return v.status.provisioning.state === 'available' && !v.currentOperation;
  }, { timeoutMs: 120_000 });
  // Each reboot cancels the pending idle timer (the power check is 30 s away), until the run hands over.
  for (let i = 0; (await handle.describe()).runId === firstRun; i++) {
    if (i > 20) throw new Error('no hand-over after 20 reboots');
    await h.hosts.reboot(ref, 'soft', `replay-timers-${i}`).catch(() => undefined);
    await waitFor('the reboot done or the run handed over', async () => {
      if ((await handle.describe()).runId !== firstRun) return true;
      const v = await view();
      return v.operations.filter((o) => o.kind === 'reboot').length > i && !v.currentOperation;
    }, { timeoutMs: 60_000 });
  }
  await handle.terminate('recorded');
  saveHistory(id, FILE, firstRun);
} finally {
  await h.close();
}
