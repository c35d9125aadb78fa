/**
 * What the power sentinel signals, decided from each list of Ironic's nodes
 * against what it saw before: a metalflow host's node that is steady (one of
 * the resting provision states, no power change under way) with another
 * power_state than when last seen steady in the same provision state, or that
 * was in the last list (steady or not) and is gone. A node seen moving between
 * provision states is in an operation of its host, which reads power itself at
 * its end. Compared with the last *steady* sight, not the last list: a list
 * taken while Ironic applies a power change shows it with a
 * target_power_state, and comparing list to list then missed the change
 * (under load, when Ironic is slow to apply it).
 */
import type { HostRef } from '../../model/host';
import type { IronicNode } from '../../clients/ironic/types';
import { OWNER_KEY } from '../ironic/node-driver';

export const SENTINEL_FIELDS = ['uuid', 'power_state', 'target_power_state', 'provision_state', 'extra'] as const;
export type SentinelNode = Pick<IronicNode, (typeof SENTINEL_FIELDS)[number]>;

/** Ironic's provision states of a node at rest (Metal3: provisioned, available, externally provisioned, inspected). */
const STEADY = new Set(['active', 'available', 'manageable']);

export interface PowerChange {
  ref: HostRef;
  nodeId: string;
  from: string | null;
  /** Absent: the node is gone. */
  to?: string | null;
}

/** The host that owns the node (the mark metalflow writes at registration), if any. */
export function ownerOf(node: Pick<IronicNode, 'extra'>): HostRef | undefined {
  const mark = node.extra?.[OWNER_KEY];
  if (typeof mark !== 'string') return undefined;
  const slash = mark.indexOf('/');
  if (slash <= 0 || slash === mark.length - 1) return undefined;
  return { namespace: mark.slice(0, slash), name: mark.slice(slash + 1) };
}

const steady = (n: SentinelNode): boolean => STEADY.has(n.provision_state ?? '') && !n.target_power_state;

/** What the sentinel remembers between lists: the last list, and each node's last steady sight. */
export interface Seen {
  last: ReadonlyMap<string, SentinelNode>;
  steady: ReadonlyMap<string, SentinelNode>;
}

export const NOTHING_SEEN: Seen = { last: new Map(), steady: new Map() };

export function powerChanges(seen: Seen, now: ReadonlyMap<string, SentinelNode>): { changes: PowerChange[]; seen: Seen } {
  const changes: PowerChange[] = [];
  const steadyNow = new Map(seen.steady);
  for (const [id, was] of seen.last) {
    if (now.has(id)) continue;
    steadyNow.delete(id);
    // Whatever state it was last seen in: a host whose operation ended just before Ironic lost
    // the node is at rest now, and only this tells it (the host reads its node when idle).
    const ref = ownerOf(was);
    if (ref) changes.push({ ref, nodeId: id, from: was.power_state ?? null });
  }
  for (const [id, is] of now) {
    if (!steady(is)) continue;
    const base = seen.steady.get(id);
    steadyNow.set(id, is);
    const ref = ownerOf(is);
    if (!ref || !base || base.provision_state !== is.provision_state) continue;
    if ((is.power_state ?? null) !== (base.power_state ?? null)) changes.push({ ref, nodeId: id, from: base.power_state ?? null, to: is.power_state ?? null });
  }
  return { changes, seen: { last: now, steady: steadyNow } };
}
