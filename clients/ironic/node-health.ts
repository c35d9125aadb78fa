/**
 * Every node's `fault` and `health` (API 1.109, which Ironic's power sync
 * caches from the BMC), in one paged list: what a BareMetalHost's `Healthy`
 * condition and `Manageable`'s `PowerFailure` reason are computed from
 * (model/conditions.ts). Read by the Kubernetes controller for the default
 * site and by a site's worker for its own site (activities/ironic/node-health.ts).
 */
import type { IronicClient } from './client';
import { NODE_HEALTH_MICROVERSION } from './microversions';

export interface NodeHealthListing {
  uuid: string;
  fault: string | null;
  /** null where the driver reports none, or Ironic is older than API 1.109. */
  health: string | null;
}

export async function listNodeHealth(ironic: IronicClient): Promise<NodeHealthListing[]> {
  const withHealth = await ironic.supports(NODE_HEALTH_MICROVERSION);
  const nodes: { uuid: string; fault?: string | null; health?: string | null }[] = withHealth
    ? await ironic.listNodeStates(['fault', 'health'], NODE_HEALTH_MICROVERSION)
    : await ironic.listNodeStates(['fault']);
  return nodes.map((n) => ({ uuid: n.uuid, fault: n.fault ?? null, health: n.health ?? null }));
}
