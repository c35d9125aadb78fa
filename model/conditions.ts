/**
 * A BareMetalHost's `status.conditions`, computed from its provisioning state
 * and operational status the way BMO's `computeConditions` does, so
 * `kubectl wait --for=condition=Ready bmh/x` and alerts on these conditions
 * keep working when metalflow takes over from Metal3.
 *
 * `Healthy` and `Manageable`'s `PowerFailure` come from Ironic's node (`health`,
 * API ≥ 1.109, and `fault`), which BMO reads on every reconcile. Here the
 * controller reads them (k8s/controller/node-health.ts) and passes `node`; the
 * worker's status writes pass none and keep what the controller last set.
 * A host whose site the controller cannot read (a dark site) gets `Healthy`
 * `Unknown`/`SiteUnreachable` instead, never `False`: nothing is known to be
 * wrong with it.
 *
 * `SiteReachable` is metalflow's own, on hosts of a configured site
 * (docs/sites.md): `False`/`SiteUnreachable` while the site leaves the host's
 * hardware calls unstarted, `True`/`SiteReachable` otherwise. Only the worker's
 * status writes pass `site`; other writers keep it as it was. A reading of the
 * default site (a host moved there) removes it. `SiteLabelAccepted` is the
 * controller's (k8s/controller/site-label.ts), kept as any other writer's.
 */
import type { HostStatus } from './host';
import { DEFAULT_SITE } from './site';

export type ConditionStatus = 'True' | 'False' | 'Unknown';

/** What Ironic says of the node beside its states (BMO `GetHealth`, `HasPowerFailure`). */
export interface NodeReading {
  /** Ironic's `health` (`OK`, `Warning`, `Critical`), null or absent when the driver reports none. */
  health?: string | null;
  /** Ironic's `fault` (`power failure`, `clean failure`, …), null when none. */
  fault?: string | null;
}

/** The host's site as its workflow sees it: a configured site, and whether it leaves the host's calls unstarted. */
export interface SiteReading {
  name: string;
  unreachable?: { since: string; reason: string };
}

/** metav1.Condition, as the API server stores it. */
export interface HostCondition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** Metal3's condition types (apis/metal3.io/v1alpha1/baremetalhost_types.go). */
export const CONDITION = {
  manageable: 'Manageable',
  availableForProvisioning: 'AvailableForProvisioning',
  provisioned: 'Provisioned',
  ready: 'Ready',
  progressing: 'Progressing',
  healthy: 'Healthy',
  /** metalflow's: a host of a configured site whose site does not take its work (no Metal3 counterpart). */
  siteReachable: 'SiteReachable',
} as const;

/** metav1.Time's wire form: RFC 3339 in whole seconds. */
export const kubeTimestamp = (d: Date): string => d.toISOString().replace(/\.\d+Z$/, 'Z');

type Wanted = [type: string, status: ConditionStatus, reason: string, message?: string];

type Pair = [status: ConditionStatus, reason: string];
const NOT_AVAILABLE: Pair = ['False', 'NotAvailable'];
const NOT_PROVISIONED: Pair = ['False', 'NotProvisioned'];
const NOT_PROGRESSING: Pair = ['False', 'NotProgressing'];
const MANAGEABLE: Pair = ['True', 'Manageable'];

/** The five state conditions, in BMO's order: Manageable, AvailableForProvisioning, Provisioned, Ready, Progressing. */
const byState = (manageable: Pair, available: Pair, provisioned: Pair, ready: Pair, progressing: Pair): Wanted[] => [
  [CONDITION.manageable, ...manageable],
  [CONDITION.availableForProvisioning, ...available],
  [CONDITION.provisioned, ...provisioned],
  [CONDITION.ready, ...ready],
  [CONDITION.progressing, ...progressing],
];

const PROGRESSING_REASON: Record<string, string> = {
  preparing: 'Preparing',
  provisioning: 'Provisioning',
  deprovisioning: 'Deprovisioning',
  inspecting: 'Inspecting',
  'match profile': 'Inspecting',
  'powering off before delete': 'PoweringOffBeforeDelete',
  deleting: 'Deleting',
};

/** BMO's `powerFailureCheck`: states in which a power failure makes the host not manageable. */
const powerFailureChecked = (state: string, operationalStatus: string): boolean =>
  !['', 'unmanaged', 'registering', 'deleting'].includes(state) && operationalStatus !== 'detached';

const HEALTH: Record<string, Pair> = { OK: ['True', 'Healthy'], Warning: ['False', 'Warning'], Critical: ['False', 'CriticalError'] };

/** Healthy's reason while the host's site cannot be read (metalflow's: BMO has no sites). */
export const SITE_UNREACHABLE_HEALTH = 'SiteUnreachable';

/**
 * Healthy and the power-failure override: from the node when there is a reading (an empty health
 * keeps what was there, as BMO's `""` case, except the dark site's Unknown, which the reading ends);
 * without one, what the last reading left. `unread`: the host's site could not be read (dark):
 * Healthy `Unknown`/`SiteUnreachable` saying why, the power failure as the last reading left it.
 */
function fromNode(state: string, operationalStatus: string, node: NodeReading | undefined, before: Map<string, HostCondition>, unread?: string): Wanted[] {
  const out: Wanted[] = [];
  const checked = powerFailureChecked(state, operationalStatus);
  const prior = before.get(CONDITION.manageable);
  const powerFailure = node ? node.fault === 'power failure' : prior?.status === 'False' && prior.reason === 'PowerFailure';
  if (checked && powerFailure) out.push([CONDITION.manageable, 'False', 'PowerFailure']);
  const health = node?.health ? (HEALTH[node.health] ?? ['Unknown', 'Unknown']) : undefined;
  const kept = before.get(CONDITION.healthy);
  if (unread !== undefined && !node) out.push([CONDITION.healthy, 'Unknown', SITE_UNREACHABLE_HEALTH, unread]);
  else if (health) out.push([CONDITION.healthy, ...health]);
  else if (kept && !(node && kept.reason === SITE_UNREACHABLE_HEALTH)) out.push([CONDITION.healthy, kept.status, kept.reason]);
  else out.push([CONDITION.healthy, 'Unknown', 'Unknown']);
  return out;
}

/** SiteReachable from the workflow's reading of its site; none for a host of the default site. */
function fromSite(site: SiteReading | undefined): Wanted[] {
  if (!site || site.name === DEFAULT_SITE) return [];
  if (site.unreachable) return [[CONDITION.siteReachable, 'False', 'SiteUnreachable', site.unreachable.reason]];
  return [[CONDITION.siteReachable, 'True', 'SiteReachable', '']];
}

/** The conditions a state and operational status call for, in BMO's order of precedence. */
function wanted(state: string, operationalStatus: string): Wanted[] {
  const out = new Map<string, Wanted>();
  const set = (w: Wanted[]) => w.forEach((c) => out.set(c[0], c));
  switch (state) {
    case '':
    case 'unmanaged':
      set(byState(['False', 'NotManaged'], NOT_AVAILABLE, NOT_PROVISIONED, NOT_PROVISIONED, NOT_PROGRESSING));
      break;
    case 'registering':
      set(byState(['False', operationalStatus === 'error' ? 'RegistrationFailed' : 'Registering'], NOT_AVAILABLE, NOT_PROVISIONED, NOT_PROVISIONED, ['True', 'Registering']));
      break;
    case 'ready':
    case 'available':
      set(byState(MANAGEABLE, ['True', 'Available'], NOT_PROVISIONED, NOT_PROVISIONED, NOT_PROGRESSING));
      break;
    case 'provisioned':
    case 'externally provisioned':
      set(byState(MANAGEABLE, NOT_AVAILABLE, ['True', 'Provisioned'], ['True', 'Provisioned'], NOT_PROGRESSING));
      break;
    default: {
      const reason = PROGRESSING_REASON[state];
      // BMO's setConditionsProgressing for the busy states; nothing for a state it does not list.
      if (reason) set(byState(MANAGEABLE, NOT_AVAILABLE, NOT_PROVISIONED, NOT_PROVISIONED, ['True', reason]));
    }
  }
  if (operationalStatus === 'error') set([[CONDITION.ready, 'False', 'Error']]);
  else if (operationalStatus === 'servicing') set([[CONDITION.ready, 'False', 'Servicing']]);
  else if (operationalStatus === 'detached') {
    set([
      [CONDITION.ready, 'False', 'Detached'],
      [CONDITION.progressing, 'False', 'Detached'],
    ]);
  }
  return [...out.values()];
}

const isCondition = (v: unknown): v is HostCondition =>
  typeof v === 'object' && v !== null && typeof (v as HostCondition).type === 'string' && typeof (v as HostCondition).status === 'string';

/**
 * The host's conditions after this status: a condition whose status does not change keeps its
 * lastTransitionTime (as cluster-api's conditions.Set does); conditions of other types that were
 * there (another controller's) are kept as they were.
 */
export function computeConditions(
  status: Pick<HostStatus, 'provisioning' | 'operationalStatus'>,
  previous: unknown,
  /** `siteUnread`: why the host's site's nodes could not be read (the controller's, for a dark site). */
  opts: { now: string; generation?: number; node?: NodeReading; site?: SiteReading; siteUnread?: string },
): HostCondition[] {
  const before = Array.isArray(previous) ? previous.filter(isCondition) : [];
  const byType = new Map(before.map((c) => [c.type, c]));
  const state = status.provisioning?.state ?? '';
  const operational = status.operationalStatus ?? '';
  const all = new Map<string, Wanted>();
  // A host now of the default site (moved there) has no SiteReachable: the default site's work is the central workers'.
  if (opts.site?.name === DEFAULT_SITE) byType.delete(CONDITION.siteReachable);
  for (const w of [...wanted(state, operational), ...fromNode(state, operational, opts.node, new Map(byType), opts.siteUnread), ...fromSite(opts.site)]) all.set(w[0], w);
  for (const [type, st, reason, message] of all.values()) {
    const old = byType.get(type);
    byType.set(type, {
      type,
      status: st,
      reason,
      message: message ?? (old?.status === st && old.reason === reason ? (old.message ?? '') : ''),
      lastTransitionTime: old?.status === st && old.lastTransitionTime ? old.lastTransitionTime : opts.now,
      ...(opts.generation !== undefined ? { observedGeneration: opts.generation } : {}),
    });
  }
  return [...byType.values()];
}
