/**
 * Saving recorded histories as replay fixtures (test/fixtures/histories, all
 * replayed by test/integration/replay.test.ts). A fixture holds the shape one
 * version of the workflow code wrote, for as long as a run of that shape may
 * still exist: a new shape gets a new file named for what it holds, and an
 * existing file is never overwritten (written with `wx`).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WithStartWorkflowOperation, type WorkflowHandle } from '@temporalio/client';
import { REPO_ROOT } from '../../config/env';
import type { HostRef, HostSpec } from '../../types/host';
import { hostWorkflowId } from '../../types/host-ref';
import { applySpecUpdate, hostViewQuery, type HostWorkflowOptions } from '../../workflows/definitions';
import type { hostWorkflow } from '../../workflows/host';
import { TEMPORAL_ADDRESS } from './env';
import { randomMac, waitFor, type Harness } from './harness';

export const FIXTURE_DIR = join(REPO_ROOT, 'test', 'fixtures', 'histories');

/** Call before recording: refuses at once, not after minutes of recording, when a fixture already exists. */
export function assertNewFixtures(...files: string[]): void {
  const taken = files.filter((f) => existsSync(join(FIXTURE_DIR, f)));
  if (taken.length > 0) {
    throw new Error(`${taken.join(', ')} exist: fixtures are never re-recorded; give a new shape a new file name`);
  }
}

/** The CLI's canonical proto-JSON of one run (the latest without runId), as runReplayHistory reads it. */
export function saveHistory(workflowId: string, file: string, runId?: string): void {
  const temporal = join(REPO_ROOT, '.venv', 'bin', 'temporal');
  const args = ['workflow', 'show', '--address', TEMPORAL_ADDRESS, '-w', workflowId, ...(runId ? ['-r', runId] : []), '-o', 'json'];
  // A run of a host with a large inventory is more than execFileSync's default 1 MiB.
  writeFileSync(join(FIXTURE_DIR, file), execFileSync(temporal, args, { maxBuffer: 64 * 1024 * 1024 }), { flag: 'wx' });
  console.log(`recorded ${workflowId}${runId ? ` run ${runId}` : ''} → ${file}`);
}

/**
 * Starts a host workflow with `spec` straight through the client (unlike the
 * API, it needs no credentials Secret to exist); returns its id and first run.
 */
export async function startHost(
  h: Harness,
  ref: HostRef,
  spec: HostSpec,
  options: Partial<HostWorkflowOptions>,
): Promise<{ id: string; firstRun: string }> {
  const id = hostWorkflowId(ref);
  const start = new WithStartWorkflowOperation<typeof hostWorkflow>('hostWorkflow', {
    workflowId: id,
    taskQueue: h.taskQueue,
    args: [{ ref, options }],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  await h.client.workflow.executeUpdateWithStart(applySpecUpdate, { args: [spec], startWorkflowOperation: start });
  return { id, firstRun: (await h.client.workflow.getHandle(id).describe()).runId };
}

/** An operation's child workflow history; an operation that ran inside the host workflow (operations-inline) has none. */
export function saveOperationHistory(op: { workflowId?: string; seq: number; kind: string }, file: string): void {
  if (!op.workflowId) {
    console.log(`operation ${op.seq}-${op.kind} ran inside the host workflow (patch operations-inline): no child history for ${file}`);
    return;
  }
  saveHistory(op.workflowId, file);
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

/** Deletes the host, waits for its workflow to end and saves its last run as `file`. */
export async function deleteAndSave(h: Harness, ref: HostRef, file: string): Promise<void> {
  await h.hosts.remove(ref);
  const { operations } = await h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref)).result();
  saveHistory(hostWorkflowId(ref), file);
  console.log(`${file}: ${operations.map((o) => `${o.kind}:${o.outcome}`).join(' ')}`);
}
