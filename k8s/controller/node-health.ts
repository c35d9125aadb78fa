/**
 * The `Healthy` condition and `Manageable`'s `PowerFailure` reason of every
 * BareMetalHost, from its Ironic node, as BMO's computeConditions reads them
 * on each reconcile (`GetHealth`: the node's `health`, API 1.109, which
 * Ironic's power sync caches from the BMC; `HasPowerFailure`: the node's
 * `fault` is `power failure`).
 *
 * The controller reads them, not the worker: they change while a host rests
 * and its workflow publishes nothing. One paged list of every node's fault and
 * health per period (not a request per host); a host's conditions are written
 * only when a type's status or reason changes, with the object's
 * resourceVersion, so a status the worker wrote in between is never
 * overwritten (the next period reads it again). The worker's own writes keep
 * what this wrote (model/conditions.ts).
 */
import type { IronicClient } from '../../clients/ironic/client';
import { NODE_HEALTH_MICROVERSION } from '../../clients/ironic/client';
import { isKubeError } from '../../clients/kubernetes/kube-error';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { computeConditions, kubeTimestamp, type HostCondition, type NodeReading } from '../../model/conditions';
import type { BareMetalHost } from './bare-metal-host';

export interface NodeHealthDeps {
  rest: KubeRest;
  ironic: IronicClient;
  periodMs: number;
  hosts: () => Iterable<BareMetalHost>;
  log: (line: string) => void;
}

const digest = (cs: unknown): string =>
  (Array.isArray(cs) ? (cs as HostCondition[]) : [])
    .map((c) => `${c.type}=${c.status}/${c.reason}`)
    .sort()
    .join(',');

export class NodeHealthReporter {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Whether the last read failed, so a failing Ironic is logged once per streak, not every period. */
  private failing = false;

  constructor(private readonly deps: NodeHealthDeps) {}

  start(): void {
    const tick = async (): Promise<void> => {
      if (this.stopped) return;
      await this.once().catch((err: unknown) => {
        if (!this.failing) this.deps.log(`node health: cannot read Ironic's nodes (retried every ${this.deps.periodMs / 1000} s): ${(err as Error).message}`);
        this.failing = true;
      });
      if (!this.stopped) this.timer = setTimeout(() => void tick(), this.deps.periodMs);
    };
    void tick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** One pass: reads every node, writes the hosts whose conditions change; returns how many. */
  async once(): Promise<number> {
    const { ironic } = this.deps;
    const withHealth = await ironic.supports(NODE_HEALTH_MICROVERSION);
    const nodes: { uuid: string; fault?: string | null; health?: string | null }[] = withHealth
      ? await ironic.listNodeStates(['fault', 'health'], NODE_HEALTH_MICROVERSION)
      : await ironic.listNodeStates(['fault']);
    if (this.failing) this.deps.log('node health: reading Ironic again');
    this.failing = false;
    const byId = new Map<string, NodeReading>(nodes.map((n) => [n.uuid, { fault: n.fault ?? null, health: n.health ?? null }]));
    let written = 0;
    for (const host of [...this.deps.hosts()]) {
      const status = host.status;
      const provisioning = status?.provisioning;
      const node = provisioning?.ID ? byId.get(provisioning.ID) : undefined;
      if (!status || !provisioning || !node || host.metadata.deletionTimestamp) continue;
      const conditions = computeConditions({ provisioning, operationalStatus: status.operationalStatus ?? '' }, status.conditions, {
        now: kubeTimestamp(new Date()),
        generation: host.metadata.generation,
        node,
      });
      if (digest(conditions) === digest(status.conditions)) continue;
      if (await this.write(host, conditions)) written++;
    }
    return written;
  }

  private async write(host: BareMetalHost, conditions: HostCondition[]): Promise<boolean> {
    const { namespace = '', name, resourceVersion } = host.metadata;
    try {
      await this.deps.rest.call('PATCH', `/apis/metal3.io/v1alpha1/namespaces/${namespace}/baremetalhosts/${name}/status`, {
        body: { metadata: { resourceVersion }, status: { conditions } },
        contentType: 'application/merge-patch+json',
      });
      return true;
    } catch (err) {
      // Changed or gone since the informer saw it: the next period reads it again.
      if ((isKubeError(err, 'conflict') || isKubeError(err, 'not-found'))) return false;
      this.deps.log(`${namespace}/${name}: node health conditions not written: ${(err as Error).message}`);
      return false;
    }
  }
}
