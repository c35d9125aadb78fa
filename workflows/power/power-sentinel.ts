/**
 * The power sentinel: one workflow per site (id `power-sentinel/<task queue>`:
 * the central worker's queue for the default site, started by the central
 * worker, workers/main.ts; `power-sentinel/site/<name>` for a configured site,
 * started by its site worker, workers/site-main.ts) that keeps one activity
 * watching the site's Ironic's nodes (activities/power/sentinel.ts). The
 * workflow runs on the central workers' queue, as every workflow does; a
 * site's watch runs on the site's queue, where only its site worker reaches
 * that Ironic, and tells that site's hosts only. One list
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
import { hostSiteQueue } from '../../model/site';
import type { PowerSentinelActivities } from '../../activities/power/sentinel';
import type { PowerSentinelInput } from '../../contracts/power-sentinel';

export async function powerSentinelWorkflow(input: PowerSentinelInput): Promise<void> {
  const watchSeconds = input.watchSeconds ?? 3600;
  // A dark site leaves its watch unstarted on its queue (no limit to run out): no event, no other site's Ironic.
  const siteQueue = hostSiteQueue(input.site);
  const { watchPowerStates } = proxyActivities<PowerSentinelActivities>({ ...ACTIVITY_OPTIONS.powerWatch(watchSeconds, input.intervalSeconds), ...(siteQueue ? { taskQueue: siteQueue } : {}) });
  for (let i = 0; i < (input.watchesPerRun ?? 24); i++) {
    await watchPowerStates({ intervalSeconds: input.intervalSeconds, watchSeconds, ...(input.namespace !== undefined ? { namespace: input.namespace } : {}), ...(siteQueue ? { site: input.site } : {}) });
  }
  await continueAsNew<typeof powerSentinelWorkflow>(input);
}
