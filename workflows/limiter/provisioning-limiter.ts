/**
 * The provisioning limiter: a counting semaphore as a workflow. Hosts ask by
 * signal-with-start (activities/limiter/activities.ts), wait for a signal
 * back, and give the permit back by signal; nothing polls. Requests are served
 * in the order they arrived. A permit whose release was lost (the holder's run
 * was terminated or timed out) is taken back once the queue has stood still
 * for `checkSeconds`: the limiter asks Temporal which holders' runs are closed.
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { LimiterActivities } from '../../activities/limiter/activities';
import { ACTIVITY_OPTIONS } from '../common/activity-options';
import {
  acquirePermitSignal,
  limiterViewQuery,
  permitGrantedSignal,
  permitQueuedSignal,
  releasePermitSignal,
  type LimiterInput,
  type LimiterState,
  type PermitRequest,
} from '../../contracts/limiter';

const acts = proxyActivities<LimiterActivities>(ACTIVITY_OPTIONS.limiter);

const DEFAULT_CHECK_SECONDS = 60;
/** An idle limiter ends after this long; the next request starts a new one. */
const IDLE_MS = 10 * 60_000;
const MAX_HISTORY_EVENTS = 2000;

export async function provisioningLimiterWorkflow(input: LimiterInput): Promise<void> {
  const st: LimiterState = input.state ?? { limit: input.limit, holders: [], queue: [] };
  /** Queued requests whose host has been told it waits. */
  const told = new Set(st.told ?? []);
  const checkMs = (input.checkSeconds ?? DEFAULT_CHECK_SECONDS) * 1000;
  let changes = 0;
  let signalling = 0;
  const drop = (requestId: string): void => {
    st.holders = st.holders.filter((h) => h.requestId !== requestId);
    st.queue = st.queue.filter((r) => r.requestId !== requestId);
    told.delete(requestId);
    changes += 1;
  };
  setHandler(acquirePermitSignal, ({ limit, ...req }) => {
    // The latest worker's setting holds (a changed METALFLOW_PROVISIONING_LIMIT takes effect with its next request).
    st.limit = limit;
    changes += 1;
    const known = st.holders.find((h) => h.requestId === req.requestId) ?? st.queue.find((r) => r.requestId === req.requestId);
    if (!known) st.queue.push(req);
    // The same request from a later run of the host: it continued as new while waiting (or holding), and keeps its place.
    // A waiting one is told again: the new run may not know it waits.
    else if (known.runId !== req.runId) {
      known.runId = req.runId;
      told.delete(req.requestId);
    }
  });
  setHandler(releasePermitSignal, ({ requestId }) => drop(requestId));
  setHandler(limiterViewQuery, () => st);

  /**
   * To the host's current run: the run that asked may have continued as new, handing the request on.
   * A closed host cannot use it, and its request (a permit: free again at once) is dropped.
   */
  const signalHost = (req: PermitRequest, signal: typeof permitGrantedSignal): void => {
    signalling += 1;
    getExternalWorkflowHandle(req.workflowId)
      .signal(signal, { requestId: req.requestId })
      .catch(() => drop(req.requestId))
      .finally(() => {
        signalling -= 1;
        changes += 1;
      });
  };
  // A run that does not know the request hands the grant back.
  const grant = (req: PermitRequest): void => {
    told.delete(req.requestId);
    st.holders.push({ ...req, grantedAt: new Date().toISOString() });
    signalHost(req, permitGrantedSignal);
  };
  /** The host of a request the limit holds shows `delayed` only once told so. */
  const tell = (req: PermitRequest): void => {
    told.add(req.requestId);
    signalHost(req, permitQueuedSignal);
  };
  const tooLong = (): boolean => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > MAX_HISTORY_EVENTS;

  for (;;) {
    while (st.queue.length > 0 && st.holders.length < st.limit) grant(st.queue.shift()!);
    for (const req of st.queue) if (!told.has(req.requestId)) tell(req);
    if (tooLong()) {
      await condition(() => signalling === 0 && allHandlersFinished());
      await continueAsNew<typeof provisioningLimiterWorkflow>({ limit: st.limit, checkSeconds: checkMs / 1000, state: { ...st, told: [...told] } });
    }
    const seen = changes;
    const moved = (): boolean => changes !== seen || tooLong();
    if (st.queue.length > 0) {
      // Full, with hosts waiting: if nothing moves for a while, a holder may be gone without releasing.
      if (await condition(moved, checkMs)) continue;
      const closed = await acts.closedPermitHolders(st.holders.map(({ requestId, workflowId, runId }) => ({ requestId, workflowId, runId })));
      for (const requestId of closed) drop(requestId);
    } else if (st.holders.length === 0 && signalling === 0) {
      if (!(await condition(moved, IDLE_MS)) && st.holders.length === 0 && st.queue.length === 0) return;
    } else {
      await condition(moved);
    }
  }
}
