/**
 * Errors shared by the BMC clients (Redfish and IPMI), typed so activities
 * and workflows can tell apart what went wrong and say so in the host status.
 *
 * Messages name the BMC, the operation and the cause; they never contain the
 * password (every message goes through `redact`).
 */
import { FAILURE, type FailureClass } from '../../model/failures';

export type BmcErrorKind =
  /** HTTP 401/403, IPMI RAKP failure or unknown user: the credentials are wrong (or lack privilege). */
  | 'bad-credentials'
  /** DNS failure, connection refused, no answer within the timeout. The message says which. */
  | 'unreachable'
  /** TLS handshake or certificate verification failed. */
  | 'tls'
  /** The system named in the BMC address does not exist (or the root path matches no single system). */
  | 'not-found'
  /** The BMC does not offer what was asked: a reset type it does not allow, HTTP 405/501, IPMI "invalid data field". */
  | 'unsupported'
  /** The BMC refused the request as invalid (HTTP 400/422 not about support). */
  | 'rejected'
  /** The BMC failed: HTTP 5xx, a task that ended in an exception, unexpected answers. */
  | 'bmc-fault'
  /** The BMC accepted a power change but the host did not reach the state within the wait. */
  | 'timeout'
  /** A BMC task that does not pass on its own ended in failure (a firmware update whose image the BMC could not fetch or flash). */
  | 'task-failed'
  /**
   * A success metalflow cannot read: a Redfish 2xx whose body is not JSON or lacks what it must hold
   * (no PowerState), ipmitool output that is not the answer to the command. Asking again gets the same.
   */
  | 'bad-answer';

export type BmcProtocol = 'redfish' | 'ipmi';

/** Kinds that may pass on their own (worth a retry with backoff). */
export const RETRYABLE_BMC_ERROR_KINDS: readonly BmcErrorKind[] = ['unreachable', 'bmc-fault', 'timeout'];

export class BmcError extends Error {
  constructor(
    readonly kind: BmcErrorKind,
    readonly protocol: BmcProtocol,
    message: string,
    /** HTTP status for Redfish, IPMI completion code for IPMI, when known. */
    readonly status?: number,
  ) {
    super(message);
    this.name = 'BmcError';
  }

  get retryable(): boolean {
    return RETRYABLE_BMC_ERROR_KINDS.includes(this.kind);
  }
}

export class RedfishError extends BmcError {
  constructor(kind: BmcErrorKind, message: string, status?: number) {
    super(kind, 'redfish', message, status);
    this.name = 'RedfishError';
  }
}

export class IpmiError extends BmcError {
  constructor(kind: BmcErrorKind, message: string, completionCode?: number) {
    super(kind, 'ipmi', message, completionCode);
    this.name = 'IpmiError';
  }
}

export function isBmcError(err: unknown): err is BmcError {
  return err instanceof BmcError;
}

/**
 * A BMC's errors (Redfish or IPMI: each client maps its protocol's failures
 * to a kind) in the closed set the workflows branch on: the kinds that may
 * pass are retried, an answer metalflow cannot read is internal, the rest
 * (credentials, no such system, unsupported, refused, a failed task) end the
 * operation with its kind in the details.
 */
export function bmcFailureClass(err: BmcError): FailureClass {
  if (err.kind === 'bad-answer') return { type: FAILURE.internal, retryable: false, details: { kind: err.kind } };
  if (err.retryable) return { type: FAILURE.transient, retryable: true, details: { kind: err.kind } };
  return { type: FAILURE.operationFailed, retryable: false, details: { kind: err.kind } };
}

/**
 * Removes a secret from text that may have come from elsewhere (a BMC's error
 * body, a tool's stderr). Very short secrets are still replaced: a garbled
 * message is better than a leaked password.
 */
export function redact(text: string, secret: string | undefined): string {
  if (!secret) return text;
  return text.split(secret).join('***');
}
