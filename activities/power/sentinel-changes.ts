/**
 * What the power sentinel signals, decided from each list of Ironic's nodes
 * against what it saw before. Only nodes with metalflow's owner mark count,
 * and the memory is small (a few strings per node) so that it can travel in
 * the activity's heartbeat and outlive a worker restart (sentinel.ts).
 *
 * A host is told when its node:
 * - is steady (a resting provision state, no power change under way) with
 *   another power_state than when last seen steady in the same provision state;
 * - is steady in another provision state than at its last steady sight
 *   (moved behind metalflow's back, or by a host operation quicker than one
 *   interval: the host then reads once more);
 * - was in the last list, in any state, and is gone. A host whose operation
 *   ended just before Ironic lost the node is at rest by now, and only this
 *   tells it. It is told again at each list, up to LOST_TELLS times, until a
 *   node with its mark shows up: a host whose read failed (Ironic busy right
 *   after a restart) is not left to its backstop check.
 *
 * A list in which at least half of the last list's nodes vanished (Ironic lost
 * its database), the first list after Ironic did not answer, or a list after
 * which visibility counts more resting hosts than the sentinel knows of
 * (sweepCalledFor: a marked node in the list, or told it has none) also
 * sweeps: every resting host that visibility lists and that has no marked
 * node in the list is told as if its node had vanished (sweepTells). That
 * reaches a host whose node was made after the last list and lost before the
 * next one, also when the last list had nothing to vanish (a new or small
 * fleet). A host the sweep told and that still has no node (the direct
 * provisioner's, or one whose registration failed) is then kept as told
 * (quiet), so that it counts as known and is not told at every list.
 *
 * Power is compared with the last *steady* sight, not with the previous list:
 * a list taken while Ironic applies a change shows the node with a
 * target_power_state, and comparing list to list missed the change whenever
 * Ironic was slow to apply it.
 */
import type { HostRef, ProvisioningState } from '../../model/host';
import type { IronicNode } from '../../clients/ironic/types';
import { OWNER_KEY } from '../ironic/node-driver';
import { SENT_MARKER } from '../ironic/sent-marker';

export const SENTINEL_FIELDS = ['uuid', 'power_state', 'target_power_state', 'provision_state', 'extra'] as const;
export type SentinelNode = Pick<IronicNode, (typeof SENTINEL_FIELDS)[number]>;

/** Ironic's provision states of a node at rest (Metal3: provisioned, available, externally provisioned, inspected). */
const STEADY = new Set(['active', 'available', 'manageable']);

/** How many lists in a row tell a host its node is gone while no node with its mark shows up. */
export const LOST_TELLS = 3;

/**
 * Seconds until the next list: the interval after a list that succeeded; after one that failed (Ironic
 * restarting, say), 2 s and a second more after each failure in a row, up to the interval, so a restarted
 * Ironic is listed a few seconds after it answers again, and an Ironic that is not there at all is asked
 * no more often than the interval within a few minutes.
 */
export function relistSeconds(failedInARow: number, intervalSeconds: number): number {
  return failedInARow > 0 ? Math.min(intervalSeconds, 1 + failedInARow) : intervalSeconds;
}

export interface PowerChange {
  ref: HostRef;
  nodeId: string;
  from: string | null;
  /** Absent: the node is gone. */
  to?: string | null;
  /** The node's provision state moved between two steady sights. */
  provision?: { from: string | null; to: string | null };
  /** That move came with a verb metalflow sent (the node's sent marker changed between the two sights). */
  ownMove?: true;
}

/** The host that owns the node (the mark metalflow writes at registration), if any. */
export function ownerOf(node: Pick<IronicNode, 'extra'>): HostRef | undefined {
  const mark = node.extra?.[OWNER_KEY];
  return typeof mark === 'string' ? parseOwner(mark) : undefined;
}

function parseOwner(mark: string): HostRef | undefined {
  const slash = mark.indexOf('/');
  if (slash <= 0 || slash === mark.length - 1) return undefined;
  return { namespace: mark.slice(0, slash), name: mark.slice(slash + 1) };
}

/** What the sentinel keeps of a node with an owner mark. */
export interface Sight {
  /** The mark: `<namespace>/<name>`. */
  owner: string;
  power: string | null;
  provision: string | null;
  /** A power change was under way (target_power_state set). */
  busy: boolean;
  /**
   * The node's sent marker (extra.metalflow_sent), when it has one: a short digest of it, changing with each verb
   * metalflow sends, and the provision state the verb was sent from (`<digest>:<state>`).
   */
  sent?: string;
}

/** What the sentinel remembers between lists. */
export interface Seen {
  /** The last list's marked nodes, by uuid. */
  last: ReadonlyMap<string, Sight>;
  /** Each listed node's last steady sight. */
  steady: ReadonlyMap<string, Sight>;
  /**
   * Hosts told their node is gone, by owner mark, and how often. nodeId '' for a host the sweep told (visibility
   * listed it at rest with no marked node): kept once told LOST_TELLS times, untold, while it has no node.
   */
  lost: ReadonlyMap<string, { nodeId: string; told: number }>;
}

export const NOTHING_SEEN: Seen = { last: new Map(), steady: new Map(), lost: new Map() };

/** The marked nodes of a list (of one namespace's hosts when given). */
export function sightsOf(nodes: Iterable<SentinelNode>, namespace?: string): Map<string, Sight> {
  const out = new Map<string, Sight>();
  for (const n of nodes) {
    const ref = ownerOf(n);
    if (!ref || (namespace !== undefined && ref.namespace !== namespace)) continue;
    const sent = sentOf(n.extra?.[SENT_MARKER]);
    out.set(n.uuid, { owner: `${ref.namespace}/${ref.name}`, power: n.power_state ?? null, provision: n.provision_state ?? null, busy: Boolean(n.target_power_state), ...(sent ? { sent } : {}) });
  }
  return out;
}

/** The marker as a Sight keeps it: FNV-1a of its JSON in base 36 (a few bytes per node in the heartbeat) and the state its verb left. */
function sentOf(marker: unknown): string | undefined {
  if (marker === undefined || marker === null) return undefined;
  let h = 0x811c9dc5;
  for (const c of JSON.stringify(marker)) {
    h ^= c.charCodeAt(0);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  const before = (marker as { before?: unknown }).before;
  return `${h.toString(36)}:${typeof before === 'string' ? before.split('@')[0] : ''}`;
}

/**
 * The node moved from `base` to `is` by a verb metalflow sent: its marker changed between the two sights, or
 * names a verb sent from the base's state (written, as markers are, before the verb: a list may see the node
 * still at rest with it).
 */
function movedByMetalflow(base: Sight, is: Sight): boolean {
  if (is.sent === undefined) return false;
  return is.sent !== base.sent || is.sent.slice(is.sent.indexOf(':') + 1) === base.provision;
}

const steady = (n: Sight): boolean => STEADY.has(n.provision ?? '') && !n.busy;

export function powerChanges(seen: Seen, now: ReadonlyMap<string, Sight>): { changes: PowerChange[]; seen: Seen; massVanish: boolean } {
  const changes: PowerChange[] = [];
  const owners = new Set([...now.values()].map((n) => n.owner));
  const lost = new Map<string, { nodeId: string; told: number }>();
  const tellLost = (owner: string, nodeId: string, from: string | null, told: number): void => {
    const ref = parseOwner(owner);
    if (!ref) return;
    changes.push({ ref, nodeId, from });
    lost.set(owner, { nodeId, told });
  };
  // Told before and still without a node: again, a bounded number of times. One the sweep found stays known
  // (quiet) once told enough: a host on no node at all is not swept again at the next count (sweepCalledFor).
  for (const [owner, was] of seen.lost) {
    if (owners.has(owner)) continue;
    if (was.told >= LOST_TELLS) {
      if (was.nodeId === '') lost.set(owner, was);
      continue;
    }
    tellLost(owner, was.nodeId, null, was.told + 1);
  }
  let vanished = 0;
  for (const [id, was] of seen.last) {
    if (now.has(id)) continue;
    vanished += 1;
    if (owners.has(was.owner) || lost.has(was.owner)) continue;
    tellLost(was.owner, id, was.power, 1);
  }
  const steadyNow = new Map<string, Sight>();
  for (const [id, is] of now) {
    const base = seen.steady.get(id);
    if (!steady(is)) {
      if (base) steadyNow.set(id, base);
      continue;
    }
    steadyNow.set(id, is);
    const ref = parseOwner(is.owner);
    if (!ref || !base) continue;
    if (base.provision !== is.provision) {
      const own = movedByMetalflow(base, is);
      changes.push({ ref, nodeId: id, from: base.power, to: is.power, provision: { from: base.provision, to: is.provision }, ...(own ? { ownMove: true as const } : {}) });
    }
    else if (base.power !== is.power) changes.push({ ref, nodeId: id, from: base.power, to: is.power });
  }
  return { changes, seen: { last: now, steady: steadyNow, lost }, massVanish: vanished > 0 && vanished * 2 >= seen.last.size };
}

/** A host as visibility lists it, for a sweep. */
export interface ListedHost {
  workflowId: string;
  owner: string;
  detached: boolean;
}

/**
 * The sweep's tells: each listed resting host with no marked node in the list and not told
 * already. Told once more at most, then kept quiet while it has no node (a host on no Ironic node
 * at all, the direct provisioner's, is told too: it reads its power once or twice and carries on,
 * and is not told again while the sentinel remembers it). A quiet host the sweep no longer lists
 * at rest (deleted, in an operation, detached) is forgotten.
 */
export function sweepTells(hosts: Iterable<ListedHost>, now: ReadonlyMap<string, Sight>, seen: Seen): { changes: (PowerChange & { workflowId: string })[]; seen: Seen } {
  const owners = new Set([...now.values()].map((n) => n.owner));
  const lost = new Map(seen.lost);
  const changes: (PowerChange & { workflowId: string })[] = [];
  const resting = new Set<string>();
  for (const h of hosts) {
    const ref = parseOwner(h.owner);
    if (!ref || h.detached) continue;
    resting.add(h.owner);
    if (owners.has(h.owner) || lost.has(h.owner)) continue;
    changes.push({ ref, nodeId: '', from: null, workflowId: h.workflowId });
    lost.set(h.owner, { nodeId: '', told: LOST_TELLS - 1 });
  }
  for (const [owner, l] of lost) if (l.told >= LOST_TELLS && !resting.has(owner)) lost.delete(owner);
  return { changes, seen: { ...seen, lost } };
}

/**
 * Whether visibility's count of resting hosts (not detached) calls for a sweep: more than the hosts the
 * sentinel knows of, those with a marked node in the last list and those told they have none. Only a
 * resting host with no marked node that nobody told can make the difference: one whose node was made after
 * a list and lost before the next, which no vanish shows (its node was never listed). The sweep then tells
 * it, and keeps it known while it has no node: the count calls for no sweep again for it.
 */
export function sweepCalledFor(restingHosts: number, seen: Seen): boolean {
  const known = new Set(seen.lost.keys());
  for (const n of seen.last.values()) known.add(n.owner);
  return restingHosts > known.size;
}

/**
 * The memory as heartbeat details: per node [uuid, owner, power, provision, busy, steady, sent?], steady
 * 0 when the node's last steady sight is this one, null when it has none, else [power, provision, sent?];
 * sent the digest of the node's sent marker (absent without one, and in an older build's record).
 */
export interface SeenRecord {
  nodes: ([string, string, string | null, string | null, 0 | 1, 0 | null | [string | null, string | null] | [string | null, string | null, string]] | [string, string, string | null, string | null, 0 | 1, 0 | null | [string | null, string | null] | [string | null, string | null, string], string])[];
  lost: [string, string, number][];
}

export function recordOf(seen: Seen): SeenRecord {
  const nodes: SeenRecord['nodes'] = [];
  for (const [id, n] of seen.last) {
    const s = seen.steady.get(id);
    const same = s !== undefined && s.power === n.power && s.provision === n.provision && s.sent === n.sent && steady(n);
    const base = same ? 0 : s ? (s.sent !== undefined ? ([s.power, s.provision, s.sent] as [string | null, string | null, string]) : ([s.power, s.provision] as [string | null, string | null])) : null;
    nodes.push(n.sent !== undefined ? [id, n.owner, n.power, n.provision, n.busy ? 1 : 0, base, n.sent] : [id, n.owner, n.power, n.provision, n.busy ? 1 : 0, base]);
  }
  return { nodes, lost: [...seen.lost].map(([owner, l]) => [owner, l.nodeId, l.told]) };
}

const str = (v: unknown): v is string => typeof v === 'string';
const strOrNull = (v: unknown): v is string | null => v === null || typeof v === 'string';

/** The memory from heartbeat details; NOTHING_SEEN for anything else (an attempt of an older build, none). */
export function seenFrom(details: unknown): Seen {
  const r = (details as { seen?: unknown } | undefined)?.seen as Partial<SeenRecord> | undefined;
  if (!r || !Array.isArray(r.nodes) || !Array.isArray(r.lost)) return NOTHING_SEEN;
  const last = new Map<string, Sight>();
  const steadyMap = new Map<string, Sight>();
  for (const e of r.nodes as unknown[]) {
    if (!Array.isArray(e) || (e.length !== 6 && e.length !== 7)) continue;
    const [id, owner, power, provision, busy, s, sent] = e as unknown[];
    if (!str(id) || !str(owner) || !strOrNull(power) || !strOrNull(provision)) continue;
    const sight: Sight = { owner, power, provision, busy: busy === 1, ...(str(sent) ? { sent } : {}) };
    last.set(id, sight);
    if (s === 0) steadyMap.set(id, sight);
    else if (Array.isArray(s) && (s.length === 2 || s.length === 3) && strOrNull(s[0]) && strOrNull(s[1])) {
      steadyMap.set(id, { owner, power: s[0], provision: s[1], busy: false, ...(str(s[2]) ? { sent: s[2] } : {}) });
    }
  }
  const lost = new Map<string, { nodeId: string; told: number }>();
  for (const e of r.lost as unknown[]) {
    if (Array.isArray(e) && e.length === 3 && str(e[0]) && str(e[1]) && typeof e[2] === 'number') lost.set(e[0], { nodeId: e[1], told: e[2] });
  }
  return { last, steady: steadyMap, lost };
}

/** What visibility shows of a running host: its search attributes (control/host-list.ts). */
export interface HostRecord {
  provisioningState: string;
  poweredOn: boolean;
}

/** States in which the host removes its node itself (powered off, then deleted) and checks no power. */
const REMOVING: ReadonlySet<string> = new Set<ProvisioningState>(['powering off before delete', 'deleting']);

/**
 * Whether a change would tell the host only what it already knows, or what it no longer asks, by its running
 * workflow's record: a tell costs the host a signal, a workflow task and a read. Such are any change of a host
 * that removes its node (its own power-off, its own delete), and a node at rest with the power the host has
 * recorded, unless it moved to another provision state without a verb of metalflow's (by hand: told, as
 * before). Without a record (the run closed, or visibility not caught up), the host is told.
 */
export function alreadyKnown(change: PowerChange, record: HostRecord | undefined): boolean {
  if (!record) return false;
  if (REMOVING.has(record.provisioningState)) return true;
  if (change.to === undefined) return false;
  if (change.provision && !change.ownMove) return false;
  return record.poweredOn === (change.to === 'power on');
}
