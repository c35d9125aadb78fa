/**
 * Waiting for a BMC to report a power state, the same way over Redfish and
 * IPMI: poll, report each reading (activities heartbeat on it), stop at the
 * deadline with the protocol's own timeout error, and stop at once when the
 * caller's signal aborts.
 */
import { sleep } from './abort';

export interface PowerPollOptions<S> {
  timeoutMs?: number;
  pollIntervalMs?: number;
  /** Called after each poll (e.g. to heartbeat a Temporal activity). */
  onPoll?: (state: S) => void;
}

export async function pollPowerState<S>(
  read: () => Promise<S>,
  target: S,
  opts: PowerPollOptions<S>,
  timedOut: (last: S, timeoutSeconds: number) => Error,
  signal?: AbortSignal,
): Promise<void> {
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const pollMs = opts.pollIntervalMs ?? 1_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = await read();
    opts.onPoll?.(state);
    if (state === target) return;
    if (Date.now() + pollMs > deadline) throw timedOut(state, Math.round(timeoutMs / 1000));
    await sleep(pollMs, signal);
  }
}
