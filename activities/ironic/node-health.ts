/**
 * A site's Ironic nodes' `fault` and `health`, listed by the site's worker for
 * the controller's node health conditions (workflows/site/node-health.ts). A
 * read: safe to retry, changes nothing.
 */
import type { IronicClient } from '../../clients/ironic/client';
import { listNodeHealth } from '../../clients/ironic/node-health';
import type { SiteNodeHealth } from '../../contracts/node-health';
import { translate } from './node-driver';

export function createNodeHealthActivities(deps: { ironic: IronicClient }) {
  return {
    async listSiteNodeHealth(): Promise<SiteNodeHealth[]> {
      try {
        return await listNodeHealth(deps.ironic);
      } catch (err) {
        return translate(err);
      }
    },
  };
}

export type NodeHealthActivities = ReturnType<typeof createNodeHealthActivities>;
