/**
 * Retry policies and input checks shared by the operation workflows that
 * drive Ironic (operations.ts) and the BMC directly (direct-operations.ts).
 */
import { NON_RETRYABLE_FAILURES } from '../../model/failures';

/**
 * Transient faults are retried quietly for about five minutes, then the
 * operation fails and the host records it.
 */
export const QUIET_RETRY = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '30 seconds',
  maximumAttempts: 12,
  nonRetryableErrorTypes: NON_RETRYABLE_FAILURES,
} as const;

/** A BMC error is recorded at once: a few quick retries for the kinds that may pass on their own. */
export const BMC_RETRY = { ...QUIET_RETRY, maximumAttempts: 3 } as const;

/** An operation's input lacks what its kind needs: a bug in the caller, not bad user input. */
export function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`operation started without ${what}`);
  return value;
}
