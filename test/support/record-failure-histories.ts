/**
 * Records the failure-loop histories for the replay test (patch
 * `continue-as-new-from-backoff`): a host whose enroll keeps failing (no
 * Secret) continues as new from its backoff; the first run (ends in
 * continue-as-new during a backoff) and the second (starts by waiting out the
 * rest of the backoff) are saved. Never overwrites a fixture: a new shape gets
 * new files. `node --import tsx test/support/record-failure-histories.ts
 * [-<patch id>]` on a running test stack; the suffix names a later shape
 * (`-counted-history`: the hand-over decided by the run's own count).
 */
import { randomMac, startHarness, waitFor } from './harness';
import { assertNewFixtures, saveHistory, startHost } from './record-fixture';

const suffix = process.argv[2] ?? '';
const FILES = [`host-failure-continue-as-new${suffix}-run1.json`, `host-failure-continue-as-new${suffix}-run2.json`];
assertNewFixtures(...FILES);
const h = await startHarness();
try {
  const ref = { namespace: 'replay', name: `failing-${Date.now()}` };
  const spec = { bmc: { address: 'fake://replay', credentialsName: 'replay-missing' }, bootMACAddress: randomMac(), online: true };
  const { id, firstRun } = await startHost(h, ref, spec, { errorBackoffSeconds: 1, maxErrorBackoffSeconds: 2, maxHistoryEvents: 20 });
  const runs: string[] = [firstRun];
  // Two hand-overs, so the second run is complete (it started from a backoff and continued as new again).
  await waitFor('two continue-as-new', async () => {
    const d = await h.client.workflow.getHandle(id).describe();
    if (!runs.includes(d.runId)) runs.push(d.runId);
    return runs.length >= 3;
  }, { timeoutMs: 120_000 });
  await h.client.workflow.getHandle(id).terminate('recorded');
  runs.slice(0, 2).forEach((runId, i) => saveHistory(id, FILES[i]!, runId));
} finally {
  await h.close();
}
