/**
 * Ironic's back-pressure waited out inside one activity attempt. Under load
 * Ironic refuses verbs with its own 503 (the conductor's concurrent action
 * limit, `[conductor] max_concurrent_deploy` / `max_concurrent_clean`, or no
 * free conductor worker: `busy`, refused before anything was done) and leaves
 * requests unanswered past the client's timeout (`timed-out`: carried out or
 * not, nobody knows). Failing the attempt for these left the host idle for
 * Temporal's growing retry backoff while Ironic had room again; instead the
 * activity waits (heartbeating, woken by a cancellation) and asks again:
 * a refused request as it was, an unanswered verb only after the node is
 * read again (node-driver.ts drive). The waits are bounded: a run of
 * refusals longer than the budget, or one that would leave the attempt no
 * room before its start-to-close timeout, fails the attempt as before and
 * Temporal's retry policy takes over.
 */
import { log } from '@temporalio/activity';
import { IronicError } from '../../clients/ironic/errors';
import { activityContext, heartbeat, pause } from '../common/activity-context';

/** How long one run of refusals (or unanswered requests) is waited out within an attempt. */
export const BACK_PRESSURE_BUDGET_MS = 5 * 60_000;
/** First wait, doubled at each refusal in a row up to the last (a jitter of ±20 % spreads hosts refused together). */
export const BACK_PRESSURE_FIRST_MS = 1000;
export const BACK_PRESSURE_MAX_MS = 15_000;
/** Room left in the attempt after the last wait: one more request at the client's timeout (30 s), and a margin. */
const ATTEMPT_MARGIN_MS = 45_000;
/** A Retry-After is honoured up to this (longer is not waited for inside the attempt). */
const MAX_RETRY_AFTER_MS = 60_000;

/** An answer (or its absence) that says Ironic is too busy now: worth waiting for within the attempt. */
export const isBackPressure = (err: unknown): err is IronicError => err instanceof IronicError && (err.kind === 'busy' || err.kind === 'timed-out');

export interface Patience {
  /**
   * With back-pressure, waits (heartbeating `details`) and returns true: ask again. False for any other error,
   * or once the run of refusals has used its budget or the attempt's room: the caller throws it.
   */
  wait(err: unknown, details?: unknown): Promise<boolean>;
  /** An answer came: the next refusal starts a new run. */
  reset(): void;
  /** Waits so far (every run), for the activity's log and the tests. */
  readonly waited: number;
}

export interface PatienceOptions {
  budgetMs?: number;
  firstMs?: number;
  maxMs?: number;
  /** For the tests: no jitter. */
  random?: () => number;
  /**
   * Ironic's NodeLocked 409 is waited out too: another action holds the node (a power change's, a provision
   * step's). A power change asks again once it is released, within the same bounds (power-send.ts).
   */
  locked?: boolean;
}

const isLocked = (err: unknown): err is IronicError => err instanceof IronicError && err.kind === 'conflict' && err.locked === true;

/** One per kind of request (reads, verbs) in an activity call: a read answered does not reset the verbs' run. */
export function patience(opts: PatienceOptions = {}): Patience {
  const { budgetMs = BACK_PRESSURE_BUDGET_MS, firstMs = BACK_PRESSURE_FIRST_MS, maxMs = BACK_PRESSURE_MAX_MS, random = Math.random } = opts;
  const waitable = (err: unknown): err is IronicError => isBackPressure(err) || (opts.locked === true && isLocked(err));
  const ctx = activityContext();
  const started = Date.now();
  const startToClose = ctx?.info.startToCloseTimeoutMs;
  // The attempt ends at its start-to-close timeout: the last wait leaves room for one more request.
  const attemptEnd = startToClose ? started + Math.max(startToClose - ATTEMPT_MARGIN_MS, startToClose / 2) : Number.POSITIVE_INFINITY;
  let runStarted: number | undefined;
  let inRun = 0;
  let waited = 0;
  return {
    async wait(err, details) {
      if (!waitable(err)) return false;
      const now = Date.now();
      runStarted ??= now;
      const left = Math.min(runStarted + budgetMs, attemptEnd) - now;
      const backoff = Math.min(firstMs * 2 ** inRun, maxMs) * (0.8 + 0.4 * random());
      const ms = Math.min(err.retryAfterMs === undefined ? backoff : Math.min(Math.max(err.retryAfterMs, firstMs), MAX_RETRY_AFTER_MS), left);
      if (ms <= 0) return false;
      const what = err.kind === 'busy' ? 'refused a request for now' : err.kind === 'conflict' ? 'holds the node for another action' : 'did not answer in time';
      if (inRun === 0 && ctx) log.info(`Ironic ${what}; asking again within this attempt`, { error: err.message, waitMs: Math.round(ms) });
      inRun += 1;
      waited += 1;
      heartbeat(details);
      await pause(ms);
      return true;
    },
    reset() {
      runStarted = undefined;
      inRun = 0;
    },
    get waited() {
      return waited;
    },
  };
}
