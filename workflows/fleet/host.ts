/**
 * One host of a fleet operation: hand it the change once (recorded, so a
 * retry or a new run never asks again), then wait for its goal in bounded
 * windows until its timeout. The activities do the I/O; this only decides
 * what the host's result is.
 */
import { ActivityFailure, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { createFleetActivities } from '../../activities/fleet/activities';
import { ACTIVITY_OPTIONS } from '../common/activity-options';
import type { FleetInput } from '../../model/fleet';
import { DEFAULT_HOST_TIMEOUT_SECONDS } from '../../model/fleet';
import type { FleetHost, FleetOptions } from '../../contracts/fleet';
import type { FleetHostResult } from '../../contracts/fleet-goals';

type FleetActivities = ReturnType<typeof createFleetActivities>;

export const fleetCalls = proxyActivities<FleetActivities>(ACTIVITY_OPTIONS.temporalCall);

function waitCalls(windowSeconds: number) {
  return proxyActivities<FleetActivities>(ACTIVITY_OPTIONS.fleetWindow(windowSeconds));
}

/** Stopping a host waits for its operation to end (Ironic asked to stop as well). */
const abortCalls = proxyActivities<FleetActivities>(ACTIVITY_OPTIONS.temporalWait);

const message = (err: unknown): string => {
  const cause = err instanceof ActivityFailure ? (err.cause ?? err) : err;
  return cause instanceof Error ? cause.message : String(cause);
};

/**
 * Drives one host to its result. `settle` records it; a cancellation of the
 * workflow itself passes through (it is never a host's failure).
 */
export async function runFleetHost(
  host: FleetHost,
  input: FleetInput,
  options: FleetOptions,
  settle: (host: FleetHost, result: FleetHostResult) => void,
): Promise<void> {
  const since = host.startedAt!;
  const call = { ref: host.ref, operation: input.operation, fleet: input.name, since };
  const timeoutSeconds = input.hostTimeoutSeconds ?? DEFAULT_HOST_TIMEOUT_SECONDS;
  const { awaitFleetHost } = waitCalls(options.pollWindowSeconds);
  try {
    if (!host.changeSent) {
      const started = await fleetCalls.startFleetChange(call);
      if ('result' in started) return settle(host, started.result);
      host.changeSent = true;
    }
    const deadline = Date.parse(since) + timeoutSeconds * 1000;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) return settle(host, { outcome: 'failed', error: `did not finish ${input.operation.kind} within hostTimeoutSeconds (${timeoutSeconds} s)` });
      const seen = await awaitFleetHost({ ...call, windowMs: Math.min(left, options.pollWindowSeconds * 1000) });
      if ('result' in seen) return settle(host, seen.result);
    }
  } catch (err) {
    if (isCancellation(err)) throw err;
    settle(host, { outcome: 'failed', error: `the fleet could not reach the host's workflow: ${message(err)}` });
  }
}

/**
 * Stops one host in flight (cancel with abortInFlight) through its own
 * workflow and records how it ended: cancelled with the reason, or what it
 * reached before the stop took. Never a failure of the host.
 */
export async function abortFleetHost(
  host: FleetHost,
  input: FleetInput,
  reason: string | undefined,
  settle: (host: FleetHost, result: FleetHostResult) => void,
): Promise<void> {
  const call = { ref: host.ref, operation: input.operation, fleet: input.name, since: host.startedAt!, ...(reason ? { reason } : {}) };
  try {
    settle(host, await abortCalls.abortFleetHost(call));
  } catch (err) {
    if (isCancellation(err)) throw err;
    settle(host, { outcome: 'skipped', reason: `the fleet could not stop the host: ${message(err)}` });
  }
}
