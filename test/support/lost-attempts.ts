/**
 * After a test SIGKILLs a worker, the activity attempts it held are lost: the
 * server notices only when their heartbeat timeout (a minute for most of
 * them) passes, and a crash test used to spend that minute idle. This asks
 * Temporal (UpdateActivityOptions, an operator's call, not the product's
 * config) to shorten the heartbeat timeout of exactly those attempts, the
 * ones the dead worker last held, waits until the server has given each up
 * (a later attempt started, or the activity ended), and puts each timeout
 * back as the workflow set it, so the next worker's attempt runs under the
 * product's own timeouts. What the test checks (what the next worker sends,
 * what the host ends as) is unchanged: only the wait is shorter.
 */
import type { Client } from '@temporalio/client';
import type { google } from '@temporalio/proto';
import { msToTs } from '@temporalio/common/lib/time';
import { waitFor } from './harness';

type Duration = google.protobuf.IDuration;
interface Pending {
  activityId: string;
  attempt: number;
  state: number;
  heartbeatTimeout: Duration | null;
  lastWorkerIdentity: string;
}

/**
 * The heartbeat timeout the dead worker's attempts get: their last heartbeat is usually older, so the server
 * gives them up at once. Also what the retry would get if it started before the original is put back (it is
 * put back while the retry waits out its backoff): long enough for its first heartbeat.
 */
const EXPIRE_AFTER_SECONDS = 5;

/** Running workflows on a task queue (the crash tests' own queue: the hosts, a fleet, the limiter). */
export async function runningOn(client: Client, taskQueue: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const w of client.workflow.list({ query: `ExecutionStatus = "Running" AND TaskQueue = "${taskQueue}"` })) ids.push(w.workflowId);
  return ids;
}

async function pendingOf(client: Client, workflowId: string): Promise<Pending[]> {
  const d = await client.workflowService.describeWorkflowExecution({ namespace: client.options.namespace, execution: { workflowId } });
  return (d.pendingActivities ?? []).map((p) => ({
    activityId: p.activityId ?? '',
    attempt: p.attempt ?? 0,
    state: Number(p.state ?? 0),
    heartbeatTimeout: p.activityOptions?.heartbeatTimeout ?? null,
    lastWorkerIdentity: p.lastWorkerIdentity ?? '',
  }));
}

async function setHeartbeat(client: Client, workflowId: string, activityId: string, timeout: Duration): Promise<void> {
  await client.workflowService.updateActivityOptions({
    namespace: client.options.namespace,
    execution: { workflowId },
    identity: 'metalflow-test',
    id: activityId,
    activityOptions: { heartbeatTimeout: timeout },
    updateMask: { paths: ['heartbeat_timeout'] },
  });
}

/** PENDING_ACTIVITY_STATE_STARTED: an attempt a worker holds. */
const STARTED = 2;

/**
 * The attempts the killed worker (`pid`) held in these workflows, given up by
 * the server within seconds instead of at their heartbeat timeout, and their
 * workflows' next tasks sent to the shared task queue. Returns how many
 * attempts there were. Call it once the worker is dead.
 */
export async function expireLostAttempts(client: Client, pid: number, workflowIds: string[]): Promise<number> {
  // The full wait, as in production (and to measure what this saves).
  if (process.env.METALFLOW_TEST_WAIT_LOST_ATTEMPTS === '1') return 0;
  const identity = `${pid}@`;
  // Their next workflow task to the task queue every worker polls, not to the dead worker's sticky queue, where
  // it would wait out the sticky schedule-to-start timeout (10 s) first. A worker shut down gracefully does the same.
  await Promise.all(
    workflowIds.map((workflowId) =>
      client.workflowService.resetStickyTaskQueue({ namespace: client.options.namespace, execution: { workflowId } }).catch(() => undefined),
    ),
  );
  const lost: { workflowId: string; activityId: string; attempt: number; original: Duration }[] = [];
  for (const workflowId of workflowIds) {
    const pending = await pendingOf(client, workflowId).catch(() => []);
    for (const p of pending) {
      // Only an attempt with a heartbeat timeout: one without is bounded by its start-to-close timeout, left as it is.
      if (p.state !== STARTED || !p.lastWorkerIdentity.startsWith(identity) || !p.heartbeatTimeout) continue;
      lost.push({ workflowId, activityId: p.activityId, attempt: p.attempt, original: p.heartbeatTimeout });
    }
  }
  await Promise.all(
    lost.map(async (l) => {
      // Refused (the activity ended meanwhile): nothing to wait for, nothing to put back.
      const shortened = await setHeartbeat(client, l.workflowId, l.activityId, msToTs(EXPIRE_AFTER_SECONDS * 1000)).then(() => true, () => false);
      if (!shortened) return;
      await waitFor(`the lost attempt ${l.attempt} of activity ${l.activityId} in ${l.workflowId} given up`, async () => {
        const p = (await pendingOf(client, l.workflowId)).find((x) => x.activityId === l.activityId);
        return !p || p.attempt > l.attempt;
      }, { timeoutMs: 120_000, intervalMs: 100 });
      // The activity may have ended already: then there is nothing to put back.
      await setHeartbeat(client, l.workflowId, l.activityId, l.original).catch(() => undefined);
    }),
  );
  return lost.length;
}
