/**
 * What the power sentinel signals, decided from two consecutive lists of
 * Ironic's nodes: a metalflow host's node that was steady in both (same
 * provision state, one of the steady ones, no power change under way) and
 * whose power_state differs, or that was steady and is gone. A node moving
 * between provision states is in an operation of its host, which reads power
 * itself at its end; so is a node with a target_power_state.
 */
import type { HostRef } from '../types/host';
import type { IronicNode } from '../clients/ironic/types';
import { OWNER_KEY } from './ironic-node-driver';

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

export function powerChanges(before: ReadonlyMap<string, SentinelNode>, now: ReadonlyMap<string, SentinelNode>): PowerChange[] {
  const out: PowerChange[] = [];
  for (const [id, was] of before) {
    const ref = ownerOf(was);
    if (!ref || !steady(was)) continue;
    const is = now.get(id);
    if (!is) {
      out.push({ ref, nodeId: id, from: was.power_state ?? null });
      continue;
    }
    if (!steady(is) || is.provision_state !== was.provision_state) continue;
    if ((is.power_state ?? null) !== (was.power_state ?? null)) out.push({ ref, nodeId: id, from: was.power_state ?? null, to: is.power_state ?? null });
  }
  return out;
}
