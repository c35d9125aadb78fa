/**
 * A host's site (model/site.ts) may change only while nothing of the old site
 * holds it: no Ironic node registered there and no operation running. A
 * registered host moved by a spec edit would be driven at the new site while
 * its node, power and DHCP reservation stay at the old one.
 */
import type { HostSpec } from '../../../model/host';
import { DEFAULT_SITE, SITE_CHANGE_STATES } from '../../../model/site';
import type { HostState, OperationKind } from '../../../contracts/host';

export function siteChangeConflict(s: HostState, spec: HostSpec, running: OperationKind | undefined): string | undefined {
  if (!s.spec) return undefined;
  const from = s.spec.site ?? DEFAULT_SITE;
  const to = spec.site ?? DEFAULT_SITE;
  if (from === to) return undefined;
  const state = s.status.provisioning.state;
  const safe = (SITE_CHANGE_STATES as readonly string[]).includes(state) && s.status.provisioning.ID === '' && running === undefined;
  if (safe) return undefined;
  const now = `${state ? `is ${state}` : 'has no state yet'}${s.status.provisioning.ID ? ` with Ironic node ${s.status.provisioning.ID}` : ''}${running ? `, ${running} running` : ''}`;
  return (
    `spec.site: the host ${now} at site "${from}"; its site can change to "${to}" only while it is unmanaged or not yet registered ` +
    '(provisioning state "" or "unmanaged", no Ironic node, no operation running). Delete the host and create it again at the new site, or remove spec.bmc first'
  );
}
