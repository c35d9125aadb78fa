/** What the pivot and site-move tests read back: the hosts of a plane, and the requests its Ironic proxy recorded. */
import { isDeploy, isPowerChange, type RecordedRequest } from '../../bench/support/ironic-proxy';

export interface PivotBmh {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: { consumerRef?: unknown };
  status?: { operationalStatus?: string; poweredOn?: boolean; provisioning?: { state: string; ID?: string; image?: { url?: string } } };
}

/** The BareMetalHosts of a namespace in one plane, by name. */
export const hostsIn = (get: (args: string[]) => { stdout: string }, ns: string): Map<string, PivotBmh> =>
  new Map((JSON.parse(get(['get', 'bmh', '-n', ns, '-o', 'json']).stdout).items as PivotBmh[]).map((h) => [h.metadata.name, h]));

/** The provision verb of a request (a deploy is `active`, a deprovision `deleted`, a clean `provide`/`clean`), if it is one. */
export const provisionVerb = (r: RecordedRequest): string | undefined =>
  r.method === 'PUT' && /\/states\/provision$/.test(r.path) ? (JSON.parse(r.body) as { target: string }).target : undefined;

/** Node creations naming `nodeName`. */
export const nodeCreates = (requests: RecordedRequest[], nodeName: string): number =>
  requests.filter((r) => r.method === 'POST' && r.path === '/v1/nodes' && r.body.includes(`"${nodeName}"`)).length;

/** Deletes of the node, by any of its ids (uuid or name). */
export const nodeDeletes = (requests: RecordedRequest[], ...ids: string[]): number =>
  requests.filter((r) => r.method === 'DELETE' && ids.some((id) => r.path === `/v1/nodes/${id}` || r.path === `/v1/nodes/${encodeURIComponent(id)}`)).length;

/**
 * What a host's move between sites asked one site's Ironic (test/integration/sites.test.ts, test/k8s/sites.test.ts):
 * the old one should see one maintenance PUT and one node delete, the new one one create, `manage` and `adopt`;
 * neither a deploy nor a power change.
 */
export const siteMoveFigures = (requests: RecordedRequest[]) => ({
  deploys: requests.filter(isDeploy).length,
  verbs: [...new Set(requests.map(provisionVerb).filter(Boolean))].sort(),
  powerChanges: requests.filter(isPowerChange).length,
  nodeCreates: requests.filter((r) => r.method === 'POST' && r.path === '/v1/nodes').length,
  maintenance: requests.filter((r) => r.method === 'PUT' && /\/maintenance$/.test(r.path)).length,
  nodeDeletes: requests.filter((r) => r.method === 'DELETE' && /^\/v1\/nodes\/[^/]+$/.test(r.path)).length,
});
