/**
 * Reads a configured site's Ironic nodes' `fault` and `health` through the
 * site's worker (workflows/site/node-health.ts), for the Kubernetes
 * controller's node health conditions: the central plane does not reach into
 * a site (docs/sites.md).
 */
import { TimeoutFailure, WorkflowFailedError, type Client } from '@temporalio/client';
import { siteTaskQueue } from '../model/site';
import { SITE_NODE_HEALTH_WORKFLOW, siteNodeHealthWorkflowId, type SiteNodeHealth, type SiteNodeHealthInput } from '../contracts/node-health';
import { runReadWorkflow } from './read-workflow';

export class SiteUnreachableError extends Error {}

/**
 * The site's nodes; a `SiteUnreachableError` (its message begins `site unreachable:`) when the site's worker took
 * no read within `startSeconds`, or took it and could not read its Ironic.
 */
export async function readSiteNodeHealth(client: Client, taskQueue: string, site: string, startSeconds: number): Promise<SiteNodeHealth[]> {
  try {
    return await runReadWorkflow<SiteNodeHealth[]>(client, SITE_NODE_HEALTH_WORKFLOW, taskQueue, siteNodeHealthWorkflowId(site), [{ site, startSeconds } satisfies SiteNodeHealthInput]);
  } catch (err) {
    if (!(err instanceof WorkflowFailedError)) throw err;
    const queue = siteTaskQueue(site);
    let deepest: unknown = err;
    for (let c: unknown = err.cause; c instanceof Error; c = c.cause) {
      if (c instanceof TimeoutFailure && c.timeoutType === 'SCHEDULE_TO_START') {
        throw new SiteUnreachableError(`site unreachable: no worker of site "${site}" took the node health read from task queue ${queue} within ${startSeconds} s (its worker: npm run worker -- --site ${site})`);
      }
      deepest = c;
    }
    throw new SiteUnreachableError(`site unreachable: the worker of site "${site}" could not read the site's Ironic: ${(deepest as Error).message}`);
  }
}
