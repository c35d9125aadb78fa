/**
 * The health check's decisions, pure (no I/O, no clock but `now`): which
 * Node is which host's, when a Node counts as unhealthy and since when (one
 * NotReady episode: the Node object and its Ready condition's last
 * transition), the episode's deterministic HostRemediation name, and which
 * due hosts may start under the global and per-group limits.
 */
import { createHash } from 'node:crypto';
import type { KubeNode } from '../../clients/kubernetes/nodes';

/** The label a user may put on a Node to name its host when neither CAPM3's label nor providerID applies: `<namespace>.<name>`. */
export const HOST_NODE_LABEL = 'metalflow.io/host';
/** CAPM3's Node label: the BareMetalHost's uid. */
export const UUID_NODE_LABEL = 'metal3.io/uuid';
/** On the BareMetalHost: the episode it was remediated for (so neither a restart nor a deleted HostRemediation remediates it twice). */
export const EPISODE_ANNOTATION = 'metalflow.io/health-check-episode';

export interface HostFacts {
  key: string;
  namespace: string;
  name: string;
  uid: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  consumerRef?: { kind?: string; name?: string; namespace?: string };
}

/**
 * Indexes hosts for {@link hostOfNode}: by uid, by `<ns>/<name>`, and by the Node name
 * a consumerRef of kind Node gives.
 */
export interface HostIndex {
  byUid: Map<string, HostFacts>;
  byKey: Map<string, HostFacts>;
  byNodeName: Map<string, HostFacts>;
}

export function indexHosts(hosts: Iterable<HostFacts>): HostIndex {
  const index: HostIndex = { byUid: new Map(), byKey: new Map(), byNodeName: new Map() };
  for (const h of hosts) {
    index.byUid.set(h.uid, h);
    index.byKey.set(`${h.namespace}/${h.name}`, h);
    if (h.consumerRef?.kind === 'Node' && h.consumerRef.name) index.byNodeName.set(h.consumerRef.name, h);
  }
  return index;
}

/**
 * The host a Node belongs to: CAPM3's `metal3.io/uuid` label (the host's uid); a
 * providerID `metal3://<uid>` or `metal3://<ns>/<host>/<consumer>` (CAPM3's formats,
 * the latter only when the host's consumerRef names that consumer); a consumerRef of
 * kind Node naming it; or the label `metalflow.io/host=<namespace>.<name>`.
 */
export function hostOfNode(node: KubeNode, index: HostIndex): HostFacts | undefined {
  const labels = node.metadata.labels ?? {};
  const byLabel = labels[UUID_NODE_LABEL] ? index.byUid.get(labels[UUID_NODE_LABEL]) : undefined;
  if (byLabel) return byLabel;
  const provider = node.spec?.providerID?.match(/^metal3:\/\/(.+)$/)?.[1];
  if (provider) {
    const parts = provider.split('/');
    if (parts.length === 1 && index.byUid.has(provider)) return index.byUid.get(provider);
    if (parts.length === 3) {
      const h = index.byKey.get(`${parts[0]}/${parts[1]}`);
      if (h && h.consumerRef?.name === parts[2]) return h;
    }
  }
  const byConsumer = index.byNodeName.get(node.metadata.name);
  if (byConsumer) return byConsumer;
  const named = labels[HOST_NODE_LABEL];
  const dot = named?.indexOf('.') ?? -1;
  return named && dot > 0 ? index.byKey.get(`${named.slice(0, dot)}/${named.slice(dot + 1)}`) : undefined;
}

/** NotReady or Unknown since (ms), or undefined: Ready, or no Ready condition reported yet. */
export function unhealthySince(node: KubeNode): number | undefined {
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  if (!ready || ready.status === 'True') return undefined;
  const at = Date.parse(ready.lastTransitionTime ?? node.metadata.creationTimestamp ?? '');
  return Number.isFinite(at) ? at : undefined;
}

/** One NotReady episode: this Node object, this transition. Stable across restarts and replicas. */
export function episodeOf(node: KubeNode): string {
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  return createHash('sha256').update(`${node.metadata.uid}/${ready?.lastTransitionTime ?? ''}`).digest('hex').slice(0, 10);
}

/** The episode's HostRemediation: `<host>-health-<episode>`, a valid object name (≤ 253, no trailing dot or dash before the suffix). */
export function remediationName(host: string, episode: string): string {
  const suffix = `-health-${episode}`;
  const base = host.slice(0, 253 - suffix.length).replace(/[.-]+$/, '');
  return `${base}${suffix}`;
}

export interface Candidate {
  key: string;
  group: string;
  /** NotReady or Unknown since (ms); undefined when its Node is Ready or it has none. */
  since?: number;
  episode?: string;
  /** A HostRemediation of this host has not ended. */
  active: boolean;
  /** The episode recorded on the host (EPISODE_ANNOTATION). */
  remediatedEpisode?: string;
  /** May be remediated at all (provisioned, online, not paused or detached). */
  eligible: boolean;
}

export interface Limits {
  notReadySeconds: number;
  maxRemediating: number;
  groupMaxPercent: number;
}

export interface Decision {
  start: Candidate[];
  /** Due, but over a limit: what to tell the user. */
  deferred: { candidate: Candidate; reason: string }[];
  /** When the next unhealthy host becomes due (ms), to look again then. */
  nextDue?: number;
}

/** A group's room: its share of its hosts, but at least one (a group of one can be remediated). */
export const groupRoom = (size: number, percent: number): number => Math.max(1, Math.floor((size * percent) / 100));

/**
 * A host holds room while its remediation runs, and after it (given up) for as long as
 * its Node stays NotReady in the episode it was remediated for: room frees when a host
 * comes back, so a partition that keeps a rack NotReady never power-cycles more than
 * the group's share. Due hosts start longest-unhealthy first.
 */
export function decide(candidates: Candidate[], limits: Limits, now: number): Decision {
  const holds = (c: Candidate): boolean => c.active || (c.since !== undefined && c.episode !== undefined && c.remediatedEpisode === c.episode);
  const size = new Map<string, number>();
  const used = new Map<string, number>();
  let total = 0;
  for (const c of candidates) {
    size.set(c.group, (size.get(c.group) ?? 0) + 1);
    if (holds(c)) {
      used.set(c.group, (used.get(c.group) ?? 0) + 1);
      total += 1;
    }
  }
  const threshold = limits.notReadySeconds * 1000;
  const decision: Decision = { start: [], deferred: [] };
  const due: Candidate[] = [];
  for (const c of candidates) {
    if (c.since === undefined || !c.eligible || holds(c)) continue;
    if (now - c.since >= threshold) due.push(c);
    else decision.nextDue = Math.min(decision.nextDue ?? Infinity, c.since + threshold);
  }
  due.sort((a, b) => a.since! - b.since! || a.key.localeCompare(b.key));
  for (const c of due) {
    const room = groupRoom(size.get(c.group) ?? 1, limits.groupMaxPercent);
    const inGroup = used.get(c.group) ?? 0;
    if (total >= limits.maxRemediating) {
      decision.deferred.push({ candidate: c, reason: `${total} host(s) remediating, the most at once (METALFLOW_HEALTH_CHECK_MAX_REMEDIATING=${limits.maxRemediating})` });
    } else if (inGroup >= room) {
      decision.deferred.push({
        candidate: c,
        reason: `group "${c.group}" has ${inGroup} of its ${size.get(c.group)} host(s) remediating or still unhealthy after one, its share (${limits.groupMaxPercent}%, at least one host) is ${room}`,
      });
    } else {
      decision.start.push(c);
      used.set(c.group, inGroup + 1);
      total += 1;
    }
  }
  return decision;
}
