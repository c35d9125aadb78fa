/** A BareMetalHost as the controller's informer holds it: the spec unparsed (validated per reconcile), the status as last written. */
import type { HostStatus } from '../../model/host';
import type { KubeObject } from './informer';
import { SITE_LABEL } from '../../model/site';

export interface BareMetalHost extends KubeObject {
  spec?: unknown;
  status?: Partial<HostStatus>;
}

/**
 * The spec the host workflow is given: Metal3's spec with the host's site
 * from its `metalflow.io/site` label (model/site.ts). Metal3's CRD has no
 * site field, and a label is what the operator's tools select on; no label:
 * the default site. A `spec.site` in the object itself is overridden, so the
 * label alone decides.
 */
export function specWithSite(obj: BareMetalHost): unknown {
  const site = obj.metadata.labels?.[SITE_LABEL];
  if (typeof obj.spec !== 'object' || obj.spec === null) return obj.spec;
  const { site: _ignored, ...spec } = obj.spec as Record<string, unknown>;
  return site === undefined ? spec : { ...spec, site };
}
