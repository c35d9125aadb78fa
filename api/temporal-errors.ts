/**
 * Temporal failures a caller should simply retry, turned into 503 with
 * Retry-After instead of a bare 500.
 *
 * Under load the server can abort an update it had not yet handed to the
 * workflow (its workflow task failed or timed out, or the registry was
 * cleared) and, once its own retries run out, answer UNAVAILABLE; the
 * update's docs say the caller should send it again. A server that is down
 * or shedding load answers the same way. An update the workflow had already
 * received when its workflow task failed (a task that timed out under load,
 * its completion refused) is aborted with FAILED_PRECONDITION "workflow task
 * failure" (the server's WorkflowNotReady; it does not retry it itself, the
 * task's effects were dropped): seen at 1,000 hosts on PostgreSQL, where it
 * failed a benchmark's deprovision with a 500; and while that task is retried
 * the server refuses updates at once ("Workflow Task in failed state").
 * Nothing was applied in those cases. A call that timed out is different: the server may still apply it,
 * so the caller is told the outcome is unknown and that repeating the same
 * request is safe (every host change is a whole desired state, so applying
 * it twice is applying it once).
 *
 * A create is an update-with-start: when one of its operations fails the SDK
 * rethrows the gRPC error itself (not a ServiceError), its code and message
 * those of the failed operation and its `details` the operation's encoded
 * detail, so both the message and the details are read.
 */
import { ServiceError, WorkflowUpdateRPCTimeoutOrCancelledError, isGrpcServiceError } from '@temporalio/client';

export interface TemporalBusy {
  /** False when the request may still take effect (the call timed out). */
  nothingApplied: boolean;
  retryAfterSeconds: number;
  message: string;
}

const RETRY_AFTER_SECONDS = 2;

/** gRPC status codes (the wire values; @grpc/grpc-js is not our dependency). */
const CODE_NAMES: Record<number, string> = { 1: 'CANCELLED', 4: 'DEADLINE_EXCEEDED', 8: 'RESOURCE_EXHAUSTED', 10: 'ABORTED', 14: 'UNAVAILABLE' };
/** The codes under which the server did not apply the request. */
const NOT_APPLIED = new Set<number>([14, 8, 10]);
const OUTCOME_UNKNOWN = new Set<number>([4, 1]);
const FAILED_PRECONDITION = 9;
/**
 * The server's WorkflowNotReady for an update (or query) whose workflow task failed: one handed to the task that
 * then failed ("unexpected workflow task failure"), or one refused at once while the task is being retried after
 * failures ("Workflow Task in failed state": timed-out tasks under load, run 6332d6; a workflow whose code keeps
 * failing stays in it, and its caller keeps being told to retry while the Temporal UI shows why).
 */
const TASK_FAILED = /workflow task failure|workflow task in failed state/i;

/** The gRPC status code and details under `err` (the SDK wraps the status in `cause`), for classification and logs. */
export function grpcStatus(err: unknown): { code: number; details?: string } | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const { code, details } = e as { code?: unknown; details?: unknown };
    if (typeof code === 'number') return { code, ...(typeof details === 'string' ? { details } : {}) };
  }
  return undefined;
}

/** Classifies `err` when it is a transient Temporal failure; undefined for everything else. */
export function temporalBusy(err: unknown): TemporalBusy | undefined {
  if (!(err instanceof ServiceError || err instanceof WorkflowUpdateRPCTimeoutOrCancelledError || isGrpcServiceError(err))) return undefined;
  const status = grpcStatus(err);
  const code = status?.code;
  if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError || (code !== undefined && OUTCOME_UNKNOWN.has(code))) {
    return {
      nothingApplied: false,
      retryAfterSeconds: RETRY_AFTER_SECONDS,
      message: 'Temporal did not answer in time; the change may or may not have been applied. Repeat the same request: it is safe to apply twice',
    };
  }
  const taskFailed = code === FAILED_PRECONDITION && (TASK_FAILED.test(status?.details ?? '') || TASK_FAILED.test(err.message));
  if (code !== undefined && (NOT_APPLIED.has(code) || taskFailed)) {
    return {
      nothingApplied: true,
      retryAfterSeconds: RETRY_AFTER_SECONDS,
      message: taskFailed
        ? `the host's workflow task failed (under load its tasks time out; if this persists, the host's workflow in the Temporal UI says why): ${TASK_FAILED.test(status?.details ?? '') ? status?.details : err.message}; nothing was changed. Retry the request`
        : `Temporal is busy or unreachable (${CODE_NAMES[code]}: ${err.message}); nothing was changed. Retry the request`,
    };
  }
  return undefined;
}
