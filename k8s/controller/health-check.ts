/**
 * The built-in health check, for clusters without Cluster API: a host whose
 * Node is NotReady or Unknown for `notReadySeconds` gets one HostRemediation
 * per NotReady episode, under the global and per-group limits
 * (health-policy.ts decides). The remediation's name is derived from the
 * episode and the episode is recorded on the host, so a restart, a second
 * replica or a deleted HostRemediation never remediates it twice. Hosts over
 * a limit get a Warning Event and are started once room frees. It runs only
 * while the controller holds the lease; all its state is re-derived from the
 * API server.
 */
import type { HealthCheckConfig } from '../../config/health-check';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { recordHostEvent } from '../../clients/kubernetes/events';
import { createHostRemediation } from '../../clients/kubernetes/host-remediations';
import { annotateHost, type KubeNode } from '../../clients/kubernetes/nodes';
import { HOST_REMEDIATION } from '../../model/host-remediation';
import { Informer, type KubeObject } from './informer';
import type { BareMetalHost } from './bare-metal-host';
import { remediationActive, type HostRemediationObject } from './remediations';
import {
  EPISODE_ANNOTATION,
  decide,
  episodeOf,
  hostOfNode,
  indexHosts,
  remediationName,
  unhealthySince,
  type Candidate,
  type HostFacts,
} from './health-policy';

export interface HealthCheckDeps {
  rest: KubeRest;
  config: HealthCheckConfig;
  hosts: () => Iterable<BareMetalHost>;
  remediations: () => Iterable<HostRemediationObject>;
  log: (message: string) => void;
}

type NodeObject = KubeNode & KubeObject;
interface HostSpecView {
  online?: boolean;
  consumerRef?: HostFacts['consumerRef'];
}

const REMEDIABLE_STATES = ['provisioned', 'externally provisioned'];
const SKIP_ANNOTATIONS = ['baremetalhost.metal3.io/paused', 'baremetalhost.metal3.io/detached'];
/** A look every so often besides the events, so nothing rests on one missed timer. */
const PERIOD_MS = 30_000;
const DEBOUNCE_MS = 200;
export class HealthCheck {
  private readonly nodes: Informer<NodeObject>;
  private timer?: NodeJS.Timeout;
  private busy = false;
  private again = false;
  private stopped = false;
  /** Episodes started by this process whose annotation the host cache may not show yet. */
  private readonly started = new Map<string, string>();
  /** Deferrals already reported (`<host>/<episode>`), so each gets one Event. */
  private reported = new Set<string>();
  private summary = '';

  constructor(private readonly deps: HealthCheckDeps) {
    this.nodes = new Informer<NodeObject>(deps.rest, '/api/v1/nodes', () => this.poke(), { log: deps.log });
  }

  async start(): Promise<void> {
    await this.nodes.start();
    const c = this.deps.config;
    this.deps.log(
      `health check: watching ${this.nodes.cache.size} Nodes (NotReady ${c.notReadySeconds} s, at most ${c.maxRemediating} at once, ${c.groupMaxPercent}% of a group by label ${c.groupLabel})`,
    );
    this.poke();
  }

  stop(): void {
    this.stopped = true;
    this.nodes.stop();
    clearTimeout(this.timer);
  }

  /** Something changed (a Node, a host, a HostRemediation): look again shortly. */
  poke(delayMs = DEBOUNCE_MS): void {
    if (this.stopped) return;
    if (this.busy) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.run(), delayMs);
  }

  private async run(): Promise<void> {
    this.busy = true;
    let next = PERIOD_MS;
    try {
      const due = await this.evaluate();
      if (due !== undefined) next = Math.min(next, Math.max(due - Date.now(), 0) + 100);
    } catch (err) {
      this.deps.log(`health check: ${err instanceof Error ? err.message : String(err)}; looking again in 5 s`);
      next = 5000;
    } finally {
      this.busy = false;
    }
    if (this.again) {
      this.again = false;
      next = DEBOUNCE_MS;
    }
    this.poke(next);
  }

  /** One look at every host; returns when the next unhealthy host becomes due. */
  private async evaluate(): Promise<number | undefined> {
    const { config, rest } = this.deps;
    const hosts = [...this.deps.hosts()].map((h) => ({ obj: h, facts: factsOf(h) }));
    const index = indexHosts(hosts.map((h) => h.facts));
    const nodeOf = new Map<string, NodeObject>();
    for (const n of this.nodes.cache.values()) {
      const h = hostOfNode(n, index);
      const seen = h && nodeOf.get(h.key);
      // Two Nodes for one machine (one about to be deleted): the newest speaks for it.
      if (h && (!seen || (seen.metadata.creationTimestamp ?? '') < (n.metadata.creationTimestamp ?? ''))) nodeOf.set(h.key, n);
    }
    const active = new Set<string>();
    for (const r of this.deps.remediations()) if (remediationActive(r)) active.add(`${r.metadata.namespace ?? ''}/${r.spec.hostName}`);

    const candidates: Candidate[] = [];
    const byKey = new Map<string, { obj: BareMetalHost; facts: HostFacts; node?: NodeObject }>();
    for (const { obj, facts } of hosts) {
      const node = nodeOf.get(facts.key);
      if (!node && !active.has(facts.key)) continue;
      byKey.set(facts.key, { obj, facts, node });
      const since = node ? unhealthySince(node) : undefined;
      const spec = (obj.spec ?? {}) as HostSpecView;
      candidates.push({
        key: facts.key,
        group: facts.labels[config.groupLabel] ?? node?.metadata.labels?.[config.groupLabel] ?? '',
        since,
        episode: node && since !== undefined ? episodeOf(node) : undefined,
        active: active.has(facts.key),
        remediatedEpisode: facts.annotations[EPISODE_ANNOTATION] ?? this.started.get(facts.key),
        eligible:
          REMEDIABLE_STATES.includes(obj.status?.provisioning?.state ?? '') && spec.online !== false && !SKIP_ANNOTATIONS.some((a) => a in facts.annotations),
      });
    }
    const now = Date.now();
    const decision = decide(candidates, config, now);

    for (const c of decision.start) {
      const h = byKey.get(c.key)!;
      await this.remediate(h.facts, h.node!, c.episode!, now - c.since!);
    }
    const reported = new Set<string>();
    for (const { candidate, reason } of decision.deferred) {
      const id = `${candidate.key}/${candidate.episode}`;
      reported.add(id);
      if (this.reported.has(id)) continue;
      const h = byKey.get(candidate.key)!;
      const message = `Node ${h.node?.metadata.name} NotReady for ${Math.round((now - candidate.since!) / 1000)} s; remediation deferred: ${reason}`;
      this.deps.log(`health check: ${candidate.key}: ${message}`);
      await recordHostEvent(rest, { namespace: h.facts.namespace, name: h.facts.name, uid: h.facts.uid }, { type: 'Warning', reason: 'RemediationDeferred', message }, 'metalflow-controller');
    }
    this.reported = reported;
    const unhealthy = candidates.filter((c) => c.since !== undefined).length;
    const summary = `health check: ${hosts.length} hosts, ${unhealthy} with a Node NotReady, ${active.size} remediating, ${decision.start.length} started, ${decision.deferred.length} deferred`;
    if (summary !== this.summary) this.deps.log(summary);
    this.summary = summary;
    return decision.nextDue;
  }

  /** The episode's HostRemediation (created once: its name is the episode's), then the episode on the host. */
  private async remediate(host: HostFacts, node: NodeObject, episode: string, forMs: number): Promise<void> {
    const { config, rest, log } = this.deps;
    const name = remediationName(host.name, episode);
    const created = await createHostRemediation(rest, host.namespace, {
      metadata: {
        name,
        namespace: host.namespace,
        labels: { 'app.kubernetes.io/created-by': 'metalflow-health-check', [EPISODE_ANNOTATION]: episode },
        annotations: { 'metalflow.io/health-check-node': node.metadata.name },
      },
      spec: {
        hostName: host.name,
        strategy: { type: 'Reboot', retryLimit: config.retryLimit, timeoutSeconds: config.timeoutSeconds },
        nodeHandling: config.nodeHandling,
        nodeName: node.metadata.name,
      },
    });
    this.started.set(host.key, episode);
    await annotateHost(rest, host, { [EPISODE_ANNOTATION]: episode });
    if (!created) return;
    const message = `Node ${node.metadata.name} NotReady for ${Math.round(forMs / 1000)} s: ${HOST_REMEDIATION.kind} ${name} created`;
    log(`health check: ${host.key}: ${message}`);
    await recordHostEvent(rest, { namespace: host.namespace, name: host.name, uid: host.uid }, { type: 'Normal', reason: 'RemediationStarted', message }, 'metalflow-controller');
  }
}

function factsOf(h: BareMetalHost): HostFacts {
  const { namespace = '', name, uid = '', labels = {}, annotations = {} } = h.metadata;
  const consumerRef = ((h.spec ?? {}) as HostSpecView).consumerRef;
  return { key: `${namespace}/${name}`, namespace, name, uid, labels, annotations, ...(consumerRef ? { consumerRef } : {}) };
}
