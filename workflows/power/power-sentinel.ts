/**
 * The power sentinel: one workflow per task queue (id `power-sentinel/<task
 * queue>`, started by the worker, workers/main.ts) that keeps one activity
 * watching Ironic's nodes (activities/power/sentinel.ts): one list
 * per interval for the whole fleet, and a `powerChanged` signal to a host whose
 * node changed power or vanished while at rest. Hosts then check their power at once, and otherwise only every
 * watchedPowerCheckSeconds (30 minutes by default instead of 5): at 1,000
 * hosts at rest, a workflow task and an Ironic read every 1.8 s instead of
 * every 0.3 s, and a change seen within the interval instead of up to 5
 * minutes later.
 *
 * Each activity attempt watches for an hour and heartbeats every interval;
 * the run continues as new after a day's attempts (history bounded). Cancelling
 * the workflow cancels the watch (a cancellation, never a failure).
 */
import { continueAsNew, proxyActivities } from '@temporalio/workflow';
import { ACTIVITY_OPTIONS } from '../common/activity-options';
import type { PowerSentinelActivities } from '../../activities/power/sentinel';
import type { PowerSentinelInput } from '../../contracts/power-sentinel';

export async function powerSentinelWorkflow(input: PowerSentinelInput): Promise<void> {
  const watchSeconds = input.watchSeconds ?? 3600;
  const { watchPowerStates } = proxyActivities<PowerSentinelActivities>(ACTIVITY_OPTIONS.powerWatch(watchSeconds, input.intervalSeconds));
  for (let i = 0; i < (input.watchesPerRun ?? 24); i++) await watchPowerStates({ intervalSeconds: input.intervalSeconds, watchSeconds, ...(input.namespace !== undefined ? { namespace: input.namespace } : {}) });
  await continueAsNew<typeof powerSentinelWorkflow>(input);
}
