/**
 * Which hosts a fleet operation's selector names, pure: every criterion given
 * must hold (namespace, labels, provisioning states, BMC types, the explicit
 * list, sites). The selection activity reads the candidates; this decides.
 */
import type { HostRef } from './host';
import type { FleetSelector } from './fleet';
import { matchesLabelSelector } from './labels';
import { DEFAULT_SITE } from './site';

export interface SelectionCandidate {
  ref: HostRef;
  provisioningState: string;
  bmcType: string;
  /** Read from the host's view (only when the selector has a label selector). */
  labels?: Record<string, string>;
  /** Its site (read only when the fleet selects by site or caps sites); none is the default site. */
  site?: string;
}

export function selectionMatches(host: SelectionCandidate, selector: FleetSelector): boolean {
  if (selector.namespace !== undefined && host.ref.namespace !== selector.namespace) return false;
  if (selector.states && !selector.states.some((s) => s === host.provisioningState)) return false;
  if (selector.bmcTypes && !selector.bmcTypes.some((t) => t === host.bmcType)) return false;
  if (selector.hosts && !selector.hosts.some((r) => r.namespace === host.ref.namespace && r.name === host.ref.name)) return false;
  if (selector.sites && !selector.sites.includes(host.site ?? DEFAULT_SITE)) return false;
  if (selector.labelSelector && !matchesLabelSelector(host.labels, selector.labelSelector)) return false;
  return true;
}
