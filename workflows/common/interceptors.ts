/**
 * Workflow interceptors of every metalflow workflow (registered with the
 * bundle: workers/worker.ts WORKFLOW_BUNDLE_OPTIONS). Labels the activities
 * of an operation running inside the host workflow with that operation, so
 * the UI shows each operation as its own step. A summary is metadata: it is
 * not part of what replay compares.
 *
 * Also counts the history events each command and accepted message costs,
 * and the bytes of the payloads they carry (history-count.ts), where the
 * workflow code issues or takes it, so a replay counts the same at the same
 * point.
 */
import type {
  ActivityInput,
  LocalActivityInput,
  Next,
  SignalInput,
  SignalWorkflowInput,
  StartChildWorkflowExecutionInput,
  TimerInput,
  UpdateInput,
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptors,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { operationLabel } from '../host/operation-label';
import { scheduleAtSite } from '../host/site-route';
import { countBytes, countEvents, failureSize, sizeOf, WORKFLOW_TASK_EVENTS } from './history-count';

const labelled = <T extends ActivityInput | LocalActivityInput>(input: T): T => {
  const label = operationLabel();
  return label && !input.options.summary ? { ...input, options: { ...input.options, summary: `${label}: ${input.activityType}` } } : input;
};

/**
 * Counts `onSettled` events when the promise settles (`onRejected` if it is rejected), leaving the
 * promise to its caller. Every such promise here is awaited by workflow code (sleep, activities),
 * so the rejection handler this attaches hides no failure.
 */
function countWhenSettled<T>(p: Promise<T>, onSettled: number, onRejected = onSettled, payloads = true): Promise<T> {
  p.then(
    (result) => {
      countEvents(onSettled);
      if (payloads) countBytes(sizeOf(result));
    },
    (err: unknown) => {
      countEvents(onRejected);
      if (payloads) countBytes(failureSize(err));
    },
  );
  return p;
}

const TASK = WORKFLOW_TASK_EVENTS;

export const interceptors = (): WorkflowInterceptors => ({
  outbound: [
    // First, so each attempt at a host's site is counted by the next one (site-route.ts).
    { scheduleActivity: scheduleAtSite },
    {
      // Scheduled, started, closed; the result wakes a workflow task.
      scheduleActivity: (input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) => {
        countEvents(3);
        countBytes(sizeOf(input.args));
        return countWhenSettled(next(labelled(input)), TASK);
      },
      // One marker, written by the task that ran it.
      scheduleLocalActivity: (input: LocalActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>) => {
        countEvents(1);
        // The marker holds the result.
        return countWhenSettled(next(labelled(input)), 0);
      },
      // Counted when it fires (started, fired, and a task of its own), not when cancelled: a timer
      // started in a task whose completion is lost and cancelled in the next never reaches the
      // history, and a replay never starts it (docs/adr/0003-counted-hand-over.md). One cancelled
      // after it was sent leaves 2 events uncounted; historyLength's backstop covers a run of those.
      startTimer: (input: TimerInput, next: Next<WorkflowOutboundCallsInterceptor, 'startTimer'>) => countWhenSettled(next(input), 2 + TASK, 0, false),
      // Initiated, started, closed; start and close each wake a task.
      startChildWorkflowExecution: (input: StartChildWorkflowExecutionInput, next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>) => {
        countEvents(3 + 2 * TASK);
        countBytes(sizeOf(input.options.args));
        return next(input);
      },
      // Initiated, signalled; the outcome wakes a task.
      signalWorkflow: (input: SignalWorkflowInput, next: Next<WorkflowOutboundCallsInterceptor, 'signalWorkflow'>) => {
        countEvents(2 + TASK);
        countBytes(sizeOf(input.args));
        return next(input);
      },
    },
  ],
  inbound: [
    {
      // Only accepted updates reach the handler (a rejected one leaves no event): accepted, completed, and its task.
      handleUpdate: (input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>) => {
        countEvents(2 + TASK);
        // Its arguments are in the accepted event, its result in the completed one.
        countBytes(sizeOf(input.args));
        return countWhenSettled(next(input), 0);
      },
      handleSignal: (input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>) => {
        countEvents(1 + TASK);
        countBytes(sizeOf(input.args));
        return next(input);
      },
    },
  ],
});
