/**
 * The site node health read's contract (workflows/site/node-health.ts): one
 * list of a configured site's Ironic nodes' `fault` and `health`, read by the
 * site's worker, for the Kubernetes controller's `Healthy` and `PowerFailure`
 * conditions (k8s/controller/node-health.ts), which reads the default site's
 * Ironic itself and never reaches into a site.
 */
export interface SiteNodeHealthInput {
  /** A configured site (not the default one): its worker lists its Ironic. */
  site: string;
  /** How long the site may leave the read untaken before it fails as `site unreachable` (the caller waits for it). */
  startSeconds: number;
}

/** One node as its site's Ironic lists it. */
export interface SiteNodeHealth {
  uuid: string;
  fault: string | null;
  health: string | null;
}

export const SITE_NODE_HEALTH_WORKFLOW = 'siteNodeHealthWorkflow';
export const siteNodeHealthWorkflowId = (site: string): string => `node-health/site/${site}`;

export type SiteNodeHealthWorkflow = (input: SiteNodeHealthInput) => Promise<SiteNodeHealth[]>;
