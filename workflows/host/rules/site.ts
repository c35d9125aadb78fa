/**
 * A host's site (model/site.ts) and how it changes. While nothing of the old
 * site holds the host (no Ironic node registered there, no operation
 * running) spec.site simply changes. A registered host at rest is *moved*
 * instead (site-move.ts): its node is adopted at the new site, as it is,
 * and removed from the old one; until that move's switch its hardware calls
 * still go to the old site, whatever spec.site says.
 */
import { patched } from '@temporalio/workflow';
import type { HostSpec, ProvisioningState } from '../../../model/host';
import { DEFAULT_SITE, SITE_CHANGE_STATES, SITE_LABEL_FIELD } from '../../../model/site';
import type { HostState, OperationKind, SiteMove } from '../../../contracts/host';
import { provisionerTraits } from '../provisioners/traits';

/** The site spec.site names (`default` when none). */
export const siteOf = (spec: HostSpec | undefined): string => spec?.site ?? DEFAULT_SITE;

/** States a registered host moves from: at rest, as a pivot takes it. */
export const MOVABLE_STATES: readonly ProvisioningState[] = ['provisioned', 'externally provisioned', 'available'];

/** Where the host's node is, and so where its hardware calls go: the old site until a move's switch, else spec.site. */
export function homeSite(s: HostState): string | undefined {
  const m = s.siteMove;
  if (m && !m.switched) return m.from;
  return s.spec?.site;
}

/** Nothing of the old site holds the host: its site may change without a move (as before moves existed). */
function unregistered(s: HostState, running: OperationKind | undefined): boolean {
  return (SITE_CHANGE_STATES as readonly string[]).includes(s.status.provisioning.state) && s.status.provisioning.ID === '' && running === undefined;
}

/**
 * Whether a BareMetalHost's site label moves a registered host, as spec.site does in API mode. Asked by the
 * spec update's handler (which runs on replay too) and only when such a change starts a move: a run recorded
 * before it has no marker there and takes the old branch, where a BareMetalHost never moved (its validator
 * refused the label's change). Never asked by the validator: a marker written there, which replay does not run,
 * is a nondeterminism error on replay (test/fixtures/baseline/host-site-move-k8s.json showed it).
 */
// patch since v0.2.0
const kubernetesMoves = (): boolean => patched('site-move-kubernetes');

/**
 * A spec accepted with a new site for a registered host starts a move (handlers.ts): the record it starts with.
 * `movesInKubernetes` is for the tests; the handler leaves it to the patch.
 */
export function siteMoveFor(s: HostState, spec: HostSpec, at: string, movesInKubernetes: () => boolean = kubernetesMoves): SiteMove | undefined {
  if (!s.spec || s.siteMove) return undefined;
  const from = siteOf(s.spec);
  const to = siteOf(spec);
  if (from === to || unregistered(s, undefined)) return undefined;
  if (s.options.publishStatus && !movesInKubernetes()) return undefined;
  return { from, to, fromNode: s.status.provisioning.ID, since: at };
}

/**
 * Why the running move must stop before its switch (interrupt.ts): withdrawn, or the host deleted. Never once
 * it switched (it only goes forward) or while it is being undone.
 */
export function siteMoveInterrupt(s: HostState): string | undefined {
  const m = s.siteMove;
  if (!m || m.switched || m.back) return undefined;
  if (s.deleteRequested) return 'the host is being deleted';
  if (siteOf(s.spec) !== m.to) return `the move to site "${m.to}" was withdrawn (spec.site is "${siteOf(s.spec)}")`;
  return undefined;
}

/**
 * Why spec.site cannot change to `spec`'s now, or undefined: the update's validator (never run on replay, so
 * its rule changes with no patch). A BareMetalHost's label moves a registered host as spec.site does.
 */
export function siteChangeConflict(s: HostState, spec: HostSpec, running: OperationKind | undefined): string | undefined {
  if (!s.spec) return undefined;
  const from = siteOf(s.spec);
  const to = siteOf(spec);
  if (from === to) return undefined;
  // A BareMetalHost's site is its label: a refusal names it, so the operator (and the controller) can tell.
  const field = s.options.publishStatus ? SITE_LABEL_FIELD : 'spec.site';
  const m = s.siteMove;
  if (m) {
    if (running === 'move' || m.switched) return `${field}: the host is moving from site "${m.from}" to site "${m.to}" now; its site can change again once the move has ended`;
    if (m.back) return `${field}: the host's move from site "${m.from}" to site "${m.to}" is being undone; its site can change again once that has ended`;
    if (to === m.from) return undefined;
    return `${field}: the host is moving from site "${m.from}" to site "${m.to}"; ${field} can go back to "${m.from}" (which undoes the move) or stay "${m.to}"`;
  }
  if (unregistered(s, running)) return undefined;
  const state = s.status.provisioning.state;
  const now = `${state ? `is ${state}` : 'has no state yet'}${s.status.provisioning.ID ? ` with Ironic node ${s.status.provisioning.ID}` : ''}${running ? `, ${running} running` : ''}`;
  const why = moveRefused(s, spec, running);
  if (why) return `${field}: the host ${now} at site "${from}"; it cannot move to site "${to}" now: ${why}`;
  return undefined;
}

/** Why a registered host cannot move between sites now, or undefined when it can. */
function moveRefused(s: HostState, spec: HostSpec, running: OperationKind | undefined): string | undefined {
  const state = s.status.provisioning.state;
  if (running) return `${running} is running; it moves once it is at rest`;
  if (!MOVABLE_STATES.includes(state)) return `a registered host moves only while ${MOVABLE_STATES.join(', ')} (it is ${state || 'registering'})`;
  if (!s.spec?.bmc || !spec.bmc) return 'it has no BMC';
  if (!provisionerTraits(s.spec).ironicNode || !provisionerTraits(spec).ironicNode) return 'only hosts of the Ironic provisioner move between sites (the direct provisioner holds media and BMC state at its site)';
  if (s.spec.dhcp || spec.dhcp) return "its DHCP reservation (spec.dhcp) stays at the old site's DHCP servers: remove spec.dhcp first, or delete the host and create it again";
  if (!s.status.provisioning.ID || s.nodeLost || s.detached || s.needsAttach) return 'it has no Ironic node of its own now (detached, or Ironic lost it); it moves once it is registered again';
  return undefined;
}
