/**
 * Saving a workflow run's history as a baseline replay fixture
 * (test/fixtures/baseline, replayed by test/unit/replay-baseline.test.ts;
 * recorded by test/support/record-baseline.ts), and the host helpers the
 * recorder and a few tests share.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { REPO_ROOT } from '../../config/env';
import type { HostRef } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery } from '../../contracts/host';
import type { hostWorkflow } from '../../workflows/host/host';
import { TEMPORAL_ADDRESS } from './env';
import { randomMac, waitFor, type Harness } from './harness';

export const BASELINE_DIR = join(REPO_ROOT, 'test', 'fixtures', 'baseline');

/**
 * One run's history (the latest without runId) as the CLI's proto-JSON, which
 * runReplayHistory reads, written without indentation (the fixtures are committed).
 */
export function saveHistory(workflowId: string, file: string, runId?: string, dir = BASELINE_DIR): void {
  const temporal = join(REPO_ROOT, '.venv', 'bin', 'temporal');
  const args = ['workflow', 'show', '--address', TEMPORAL_ADDRESS, '-w', workflowId, ...(runId ? ['-r', runId] : []), '-o', 'json'];
  // A run of a host with a large inventory is more than execFileSync's default 1 MiB.
  const json = execFileSync(temporal, args, { maxBuffer: 64 * 1024 * 1024 }).toString('utf8');
  writeFileSync(join(dir, file), `${JSON.stringify(JSON.parse(json))}\n`);
  console.log(`recorded ${workflowId}${runId ? ` run ${runId}` : ''} → ${file}`);
}

/** A fake-hardware host put through the API, once it is available and idle: its workflow handle and Ironic node id. */
export async function availableFakeHost(h: Harness, ref: HostRef, bmcName: string, timeoutMs?: number): Promise<{ handle: WorkflowHandle<typeof hostWorkflow>; nodeId: string }> {
  const handle = h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref));
  await h.hosts.put(ref, {
    spec: { bmc: { address: `fake://${bmcName}`, credentialsName: `${bmcName}-bmc` }, bootMACAddress: randomMac(), online: true },
    credentials: { username: 'admin', password: 'recorded-password' },
  });
  const view = await waitFor('available', async () => {
    const v = await handle.query(hostViewQuery);
    return v.status.provisioning.state === 'available' && !v.currentOperation ? v : undefined;
  }, timeoutMs ? { timeoutMs } : {});
  return { handle, nodeId: view.status.provisioning.ID };
}
