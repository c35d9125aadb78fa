/**
 * One list of a configured site's Ironic nodes' `fault` and `health`, for the
 * Kubernetes controller (k8s/controller/node-health.ts): only the site's
 * worker reaches the site's Ironic, so the list runs on the site's task queue.
 * A site that leaves it untaken for `startSeconds` fails it (nothing ran,
 * nothing to undo); the controller then reports the site's hosts as
 * `site unreachable`. Id `node-health/site/<name>`: one read per site at a
 * time. Two events of history; no state.
 */
import { proxyActivities } from '@temporalio/workflow';
import { ACTIVITY_OPTIONS } from '../common/activity-options';
import type { NodeHealthActivities } from '../../activities/ironic/node-health';
import type { SiteNodeHealth, SiteNodeHealthInput } from '../../contracts/node-health';
import { siteTaskQueue } from '../../model/site';

export async function siteNodeHealthWorkflow(input: SiteNodeHealthInput): Promise<SiteNodeHealth[]> {
  const atSite = proxyActivities<NodeHealthActivities>({
    ...ACTIVITY_OPTIONS.ironicFirmwareRead,
    taskQueue: siteTaskQueue(input.site),
    scheduleToStartTimeout: `${input.startSeconds} seconds`,
  });
  return atSite.listSiteNodeHealth();
}
