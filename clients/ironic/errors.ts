/** Ironic's failures, typed so activities can tell "busy, try again" from "refused" from "gone". */
import { FAILURE, type FailureClass } from '../../model/failures';

/**
 * `tls`: the handshake failed (untrusted certificate, a client certificate wanted, not TLS at all); retried like `unavailable`.
 * `bad-answer`: a success whose body metalflow cannot read (not JSON): sending it again gets the same.
 * `busy`: Ironic's own 503 (its TemporaryFailure and kinds: the conductor's concurrent action limit,
 * `[conductor] max_concurrent_deploy` / `max_concurrent_clean`, or no free conductor worker): it refused the
 * request before carrying it out and asks for it again later; sending it again is safe.
 * `timed-out`: the request went out and no answer came within the client's timeout (a saturated Ironic):
 * whether Ironic carried it out is unknown, so a verb is sent again only after the node is read.
 * `unavailable`: Ironic unreachable, or a 5xx that is neither (a 500, a gateway's 502/503/504).
 */
export type IronicErrorKind = 'not-found' | 'conflict' | 'rejected' | 'too-old' | 'busy' | 'timed-out' | 'unavailable' | 'tls' | 'bad-answer';

export class IronicError extends Error {
  constructor(
    readonly kind: IronicErrorKind,
    message: string,
    readonly status?: number,
    /** With `not-found`: the node Ironic says it does not have (a 404 on a node's own path). */
    readonly missingNode?: string,
    /** With `busy`: the wait the answer's Retry-After header asked for (Ironic itself sends none; a proxy in front may). */
    readonly retryAfterMs?: number,
    more: IronicErrorMore = {},
  ) {
    super(message);
    this.name = 'IronicError';
    if (more.outcomeUnknown) this.outcomeUnknown = true;
    if (more.locked) this.locked = true;
  }

  /**
   * A change (not a read) that went out and got no HTTP answer: it timed out, or the connection closed under it.
   * Ironic may have taken it, may still take it (a request queued in a saturated Ironic is served after the client
   * gave up on it), or never saw it: a caller reads the node before sending it again.
   */
  readonly outcomeUnknown?: true;
  /** A 409 that is Ironic's NodeLocked ("Node … is locked by host …"): another action holds the node now. A 409 Ironic refuses for good is `rejected` (ironicConflict). */
  readonly locked?: true;
}

export interface IronicErrorMore {
  outcomeUnknown?: boolean;
  locked?: boolean;
}

/**
 * Ironic's 409s by the exception behind them. Its error document names no exception class, only the message
 * (ironic/common/exception.py), so the message decides:
 * - `locked`: NodeLocked ("Node … is locked by host …"), ParentNodeLocked and ChildNodeLocked ("… is presently
 *   locked …"): another action holds the node; the same request passes once it is released.
 * - `exists`: a name, UUID or MAC another record holds (NodeAlreadyExists, DuplicateName, MACAlreadyExists,
 *   PortAlreadyExists, InstanceAssociated, VifAlreadyAttached …): the caller looks at who holds it (registration).
 * - `refused`: the rest, InvalidState and its kin: a power off of a node whose `disable_power_off` is set
 *   (PowerStateFailure), a node associated with an instance, a field or a delete the node's state forbids.
 *   Nothing metalflow waits for changes the answer, so it is final: a 409 no pattern here knows is one too,
 *   never retried without end.
 */
export type IronicConflict = 'locked' | 'exists' | 'refused';

export function ironicConflict(body: string): IronicConflict {
  const message = ironicErrorMessage(body);
  if (/is locked by host|is presently locked/i.test(message)) return 'locked';
  if (/already (exists|associated|attached)/i.test(message)) return 'exists';
  return 'refused';
}

/**
 * What Ironic's terse refusals mean, said with them: its PowerStateFailure at the API ("Failed to set node power
 * state to power off.") is only ever the node's `disable_power_off`.
 */
export function refusalHint(body: string): string | undefined {
  if (/^Failed to set node power state to (soft )?power off/i.test(ironicErrorMessage(body))) {
    return "the node's disable_power_off is set: Ironic never powers it off (spec.disablePowerOff, or set on the node by someone else)";
  }
  return undefined;
}

/** Ironic busy, slow or unreachable: the same request may succeed later (the worker's wait at start, the benchmark's floor). */
export const ironicMayPass = (err: unknown): err is IronicError =>
  err instanceof IronicError && (err.kind === 'unavailable' || err.kind === 'busy' || err.kind === 'timed-out');

/**
 * A Retry-After header in milliseconds: delay-seconds or an HTTP date (RFC 9110 10.2.3); undefined when
 * absent or unreadable. A date in the past is no wait.
 */
export function retryAfterMs(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Whether a body is Ironic's own error document (`{"error_message": …}`), not a proxy's page or an empty answer. */
export function isIronicErrorBody(body: string): boolean {
  try {
    const parsed = JSON.parse(body) as unknown;
    return typeof parsed === 'object' && parsed !== null && 'error_message' in parsed;
  } catch {
    return false;
  }
}

/** What a verb or read on a node Ironic no longer has says. */
export const nodeGoneMessage = (nodeId: string): string =>
  `Ironic node ${nodeId} no longer exists (Ironic lost it, e.g. its database was emptied, or it was deleted behind metalflow's back)`;

/**
 * Ironic's errors in the closed set the workflows branch on. A 404 on the
 * node itself is "node gone" (the host registers again; nothing to retry); a
 * 404 on anything else (a sub-resource, a driver) may pass.
 */
export function ironicFailureClass(err: IronicError): FailureClass {
  switch (err.kind) {
    case 'too-old':
      return { type: FAILURE.ironicTooOld, retryable: false };
    case 'rejected':
      return { type: FAILURE.ironicRejected, retryable: false };
    case 'bad-answer':
      return { type: FAILURE.internal, retryable: false };
    case 'not-found':
      if (err.missingNode !== undefined) return { type: FAILURE.nodeGone, retryable: false, message: nodeGoneMessage(err.missingNode), details: { nodeId: err.missingNode } };
      return { type: FAILURE.transient, retryable: true };
    // A conflict is a locked node, or a name or MAC taken by a record registration raced with (its retry finds it its
    // own); Ironic's refusals are `rejected` (ironicConflict).
    case 'conflict':
    case 'busy':
    case 'timed-out':
    case 'unavailable':
    case 'tls':
      return { type: FAILURE.transient, retryable: true };
  }
}

/** The node a 404 is about, when Ironic says that node itself could not be found (not a sub-resource such as its inventory). */
export function missingNodeOf(path: string, message: string): string | undefined {
  const m = /^\/v1\/nodes\/([^/?]+)/.exec(path);
  if (!m || !/Node .* could not be found/i.test(message)) return undefined;
  return decodeURIComponent(m[1]!);
}


/** Ironic wraps its message as JSON inside a JSON string; unwrap it to the faultstring. */
export function ironicErrorMessage(body: string): string {
  try {
    const outer = JSON.parse(body) as { error_message?: unknown };
    const inner = outer.error_message;
    if (typeof inner === 'string') {
      try {
        const parsed = JSON.parse(inner) as { faultstring?: string };
        return parsed.faultstring ?? inner;
      } catch {
        return inner;
      }
    }
    if (inner && typeof inner === 'object' && 'faultstring' in inner) {
      return String((inner as { faultstring: unknown }).faultstring);
    }
  } catch {
    // not JSON: fall through to the raw text
  }
  return body.slice(0, 500);
}
