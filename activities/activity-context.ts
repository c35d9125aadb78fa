/**
 * Access to the Temporal activity context that also works when an activity
 * function is called directly (activity tests against the real Ironic).
 */
import { Context } from '@temporalio/activity';

export interface PollOptions {
  initialMs: number;
  factor: number;
  maxMs: number;
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
      activityContext()?.heartbeat(details);
      await pause(delay);
      delay = Math.min(delay * poll.factor, poll.maxMs);
    },
    reset(): void {
      delay = poll.initialMs;
    },
  };
}
