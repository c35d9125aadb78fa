/**
 * Access to the Temporal activity context that also works when an activity
 * function is called directly (activity tests against the real Ironic).
 */
import { Context } from '@temporalio/activity';

export interface PollOptions {
  initialMs: number;
  factor: number;
  maxMs: number;
  /** How long a node Ironic keeps locked is polled before the operation fails naming the lock (activities/ironic/node-lock.ts). */
  lockLimitMs?: number;
}

/** Starts fast (Ironic's fake and quick steps finish in well under a second) and backs off to a few seconds. */
export const DEFAULT_POLL: PollOptions = { initialMs: 200, factor: 1.5, maxMs: 3000 };

export function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}

/** The details each running activity last reported, so keep-alive beats repeat them instead of erasing them. */
const lastDetails = new WeakMap<Context, unknown>();

/** Heartbeats with `details` (the progress a retry resumes from) and remembers them. */
export function heartbeat(details?: unknown): void {
  const ctx = activityContext();
  if (!ctx) return;
  if (details !== undefined) lastDetails.set(ctx, details);
  ctx.heartbeat(details ?? lastDetails.get(ctx) ?? ctx.info.heartbeatDetails);
}

/**
 * Heartbeats every `everyMs` for as long as the activity runs, repeating the
 * last details. A request queued behind a busy Ironic is still progress: at
 * fleet scale, without this, slow answers look like a dead worker, the server
 * times the attempt out, and its retry piles more requests on the same Ironic.
 * Returns the function that stops it.
 */
export function keepAlive(everyMs = 10_000): () => void {
  const ctx = activityContext();
  // A local activity has no heartbeat: it is bounded by its start-to-close timeout alone.
  if (!ctx || ctx.info.isLocal) return () => undefined;
  const timer = setInterval(() => heartbeat(), everyMs);
  return () => clearInterval(timer);
}

/** Sleeps, waking early with a cancellation when Temporal cancels the activity. */
export function pause(ms: number): Promise<void> {
  const ctx = activityContext();
  return ctx ? ctx.sleep(ms) : new Promise((resolve) => setTimeout(resolve, ms));
}

/** Waits between polls: heartbeats (so a dead worker is noticed), then sleeps a growing delay. */
export function poller(poll: PollOptions) {
  let delay = poll.initialMs;
  return {
    async wait(details?: unknown): Promise<void> {
      heartbeat(details);
      await pause(delay);
      delay = Math.min(delay * poll.factor, poll.maxMs);
    },
    reset(): void {
      delay = poll.initialMs;
    },
  };
}
