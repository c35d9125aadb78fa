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
  /** A 409 that is Ironic's NodeLocked ("Node … is locked by host …"): another action holds the node now. */
  readonly locked?: true;
}

export interface IronicErrorMore {
  outcomeUnknown?: boolean;
  locked?: boolean;
}

/** Ironic's NodeLocked: a conductor holds the node's lock for an action under way (its own, or a power change). */
export const nodeLocked = (body: string): boolean => /is locked by host/i.test(ironicErrorMessage(body));

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

/**
 * Ironic's 409 for a field its node's provision state does not let change
 * (its conductor's InvalidState: "Node … can not have inspect_interface updated
 * unless it is in one of allowed (…) states or in maintenance mode. Current
 * state is 'active'."): sending it again changes nothing, unlike a locked node's 409.
 */
export const refusedInState = (body: string): boolean => /unless it is in one of allowed \(/i.test(ironicErrorMessage(body));

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
