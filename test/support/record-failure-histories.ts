/**
 * Records the failure-loop histories for the replay test (patch
 * `continue-as-new-from-backoff`): a host whose enroll keeps failing (no
 * Secret) continues as new from its backoff; the first run (ends in
 * continue-as-new during a backoff) and the second (starts by waiting out the
 * rest of the backoff) are saved. Never overwrites a fixture: a new shape gets
 * new files. `node --import tsx test/support/record-failure-histories.ts` on a
 * running test stack.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { REPO_ROOT } from '../../config/env';
import { hostWorkflowId } from '../../types/host-ref';
import { applySpecUpdate } from '../../workflows/definitions';
import type { hostWorkflow } from '../../workflows/host';
import { TEMPORAL_ADDRESS } from './env';
import { randomMac, startHarness, waitFor } from './harness';

const OUT = join(REPO_ROOT, 'test', 'fixtures', 'histories');
const h = await startHarness();
try {
  const ref = { namespace: 'replay', name: `failing-${Date.now()}` };
  const id = hostWorkflowId(ref);
  const start = new WithStartWorkflowOperation<typeof hostWorkflow>('hostWorkflow', {
    workflowId: id,
    taskQueue: h.taskQueue,
    args: [{ ref, options: { errorBackoffSeconds: 1, maxErrorBackoffSeconds: 2, maxHistoryEvents: 20 } }],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  const spec = { bmc: { address: 'fake://replay', credentialsName: 'replay-missing' }, bootMACAddress: randomMac(), online: true };
  await h.client.workflow.executeUpdateWithStart(applySpecUpdate, { args: [spec], startWorkflowOperation: start });
  const first = (await h.client.workflow.getHandle(id).describe()).runId;
  const runs: string[] = [first];
  // Two hand-overs, so the second run is complete (it started from a backoff and continued as new again).
  await waitFor('two continue-as-new', async () => {
    const d = await h.client.workflow.getHandle(id).describe();
    if (!runs.includes(d.runId)) runs.push(d.runId);
    return runs.length >= 3;
  }, { timeoutMs: 120_000 });
  await h.client.workflow.getHandle(id).terminate('recorded');
  const temporal = join(REPO_ROOT, '.venv', 'bin', 'temporal');
  runs.slice(0, 2).forEach((runId, i) => {
    const json = execFileSync(temporal, ['workflow', 'show', '--address', TEMPORAL_ADDRESS, '-w', id, '-r', runId, '-o', 'json']);
    const file = `host-failure-continue-as-new-run${i + 1}.json`;
    writeFileSync(join(OUT, file), json, { flag: 'wx' });
    console.log(`recorded ${id} run ${runId} → ${file}`);
  });
} finally {
  await h.close();
}
