/**
 * The one place a peer's error becomes the Temporal failure a workflow sees.
 * Clients throw typed errors of their own and say where each falls in the
 * closed set (model/failures.ts); this turns that into an ApplicationFailure
 * whose `type` the workflows and retry policies branch on. A bug in metalflow
 * (a TypeError, a RangeError…) is final: retrying runs the same code on the
 * same input. Anything else unknown may pass and is retried as transient.
 */
import { ApplicationFailure, TemporalFailure } from '@temporalio/common';
import { FAILURE, type FailureClass } from '../../model/failures';
import { IronicError, ironicFailureClass } from '../../clients/ironic/errors';
import { BmcError, bmcFailureClass } from '../../clients/bmc/errors';
import { ImageError, imageFailureClass } from '../../clients/images/errors';
import { KubeError, kubeFailureClass } from '../../clients/kubernetes/kube-error';

/** Errors no retry can mend: a bug in metalflow, not a peer being busy. */
const PROGRAMMING_ERRORS = [TypeError, ReferenceError, RangeError, SyntaxError];

export const isProgrammingError = (err: unknown): err is Error => PROGRAMMING_ERRORS.some((t) => err instanceof t);

/** Where `err` falls in the closed set, with the message to report; undefined for Temporal's own failures (a cancellation…). */
export function failureClassOf(err: unknown): (FailureClass & { message: string }) | undefined {
  if (err instanceof TemporalFailure) return undefined;
  const message = err instanceof Error ? err.message : String(err);
  const withMessage = (c: FailureClass) => ({ ...c, message: c.message ?? message });
  if (err instanceof IronicError) return withMessage(ironicFailureClass(err));
  if (err instanceof BmcError) return withMessage(bmcFailureClass(err));
  if (err instanceof ImageError) return withMessage(imageFailureClass(err));
  if (err instanceof KubeError) return withMessage(kubeFailureClass(err));
  if (isProgrammingError(err)) return { type: FAILURE.internal, retryable: false, message: `internal error in metalflow: ${err.name}: ${err.message}` };
  // Aborted by the caller's signal: the activity's own cancellation handling reports it.
  if (err instanceof Error && err.name === 'AbortError') return undefined;
  return { type: FAILURE.transient, retryable: true, message };
}

/** `err` as the failure an activity throws: Temporal's own failures as they are, everything else by its class. */
export function toFailure(err: unknown): unknown {
  const c = failureClassOf(err);
  if (!c) return err;
  const failure = ApplicationFailure.create({
    message: c.message,
    type: c.type,
    nonRetryable: !c.retryable,
    ...(c.details ? { details: [c.details] } : {}),
  });
  // A bug's own stack, where an operator reading the failure looks for it (not this function's).
  if (isProgrammingError(err) && err.stack) failure.stack = err.stack;
  return failure;
}
