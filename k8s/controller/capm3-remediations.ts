/**
 * METALFLOW_REMEDIATION_CAPM3=true, for clusters that run CAPM3 without its
 * remediation controller: each Metal3Remediation
 * (infrastructure.cluster.x-k8s.io/v1beta1) gets one HostRemediation,
 * `capm3-<name>`, owned by it, naming the host its Machine's Metal3Machine
 * holds (annotation `metal3.io/BareMetalHost`), with its strategy; the
 * HostRemediation's phase, retryCount and lastRemediated are written back
 * to the Metal3Remediation's status. Deleting the Metal3Remediation deletes
 * the HostRemediation (which cancels the remediation).
 */
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { isKubeError } from '../../clients/kubernetes/kube-error';
import { createHostRemediation, hostRemediationsPath } from '../../clients/kubernetes/host-remediations';
import { REMEDIATION_DEFAULTS } from '../../model/remediation';
import { Informer, watchPaths, type KubeObject } from './informer';
import { WorkQueue } from './work-queue';
import type { HostRemediationObject } from './remediations';

const INFRA = '/apis/infrastructure.cluster.x-k8s.io/v1beta1';
const CAPI = '/apis/cluster.x-k8s.io/v1beta1';
/** On the HostRemediation: the Metal3Remediation it stands for. */
export const CAPM3_SOURCE_LABEL = 'metalflow.io/metal3remediation';
const MERGE = 'application/merge-patch+json';

interface Metal3Remediation extends KubeObject {
  metadata: KubeObject['metadata'] & { ownerReferences?: { kind: string; name: string }[] };
  spec?: { strategy?: { type?: string; retryLimit?: number; timeout?: string } };
  status?: { phase?: string; retryCount?: number; lastRemediated?: string };
}

export interface Capm3BridgeDeps {
  rest: KubeRest;
  /** The watched namespaces; every namespace when unset (METALFLOW_WATCH_NAMESPACE). */
  namespaces?: readonly string[];
  hostRemediation: (key: string) => HostRemediationObject | undefined;
  log: (message: string) => void;
}

/** A Go duration ("600s", "10m", "1h2m3s") in whole seconds; undefined when it is not one. */
export function goDurationSeconds(d: string | undefined): number | undefined {
  const m = d?.match(/^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+(?:\.\d+)?)s)?$/);
  if (!d || !m || d === '') return undefined;
  return Math.round(Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0));
}

export const hostRemediationNameFor = (name: string): string => `capm3-${name}`.slice(0, 253).replace(/[.-]+$/, '');

export class Capm3RemediationBridge {
  private readonly informer: Informer<Metal3Remediation>;
  private readonly queue: WorkQueue;

  constructor(private readonly deps: Capm3BridgeDeps) {
    this.queue = new WorkQueue((key) => this.reconcile(key), { maxQueued: 10_000, concurrency: 2, baseBackoffMs: 1000, maxBackoffMs: 60_000 });
    const paths = watchPaths(deps.namespaces, (ns) => `${INFRA}${ns ? `/namespaces/${encodeURIComponent(ns)}` : ''}/metal3remediations`);
    this.informer = new Informer<Metal3Remediation>(deps.rest, paths, (key) => this.queue.add(key), { log: deps.log });
  }

  start(): Promise<void> {
    return this.informer.start();
  }

  stop(): void {
    this.informer.stop();
    this.queue.stop();
  }

  /** A HostRemediation changed: its Metal3Remediation's status follows. */
  hostRemediationChanged(key: string): void {
    const source = this.deps.hostRemediation(key)?.metadata.labels?.[CAPM3_SOURCE_LABEL];
    if (source) this.queue.add(`${key.split('/')[0]}/${source}`);
  }

  private async reconcile(key: string): Promise<void> {
    const [namespace = '', name = ''] = key.split('/');
    const own = hostRemediationNameFor(name);
    const m = this.informer.cache.get(key);
    if (!m || m.metadata.deletionTimestamp) {
      await this.deleteHostRemediation(namespace, own);
      return;
    }
    const hr = this.deps.hostRemediation(`${namespace}/${own}`);
    if (hr) return this.mirror(m, hr);
    const host = await this.hostOf(m);
    const strategy = m.spec?.strategy ?? {};
    const timeout = goDurationSeconds(strategy.timeout);
    const created = await createHostRemediation(this.deps.rest, namespace, {
      metadata: {
        name: own,
        namespace,
        labels: { [CAPM3_SOURCE_LABEL]: name },
        ownerReferences: [{ apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta1', kind: 'Metal3Remediation', name, uid: m.metadata.uid }],
      },
      spec: {
        hostName: host.name,
        // CAPM3's bounds, which the HostRemediation CRD enforces: a shorter timeout is raised to 100 s.
        strategy: { type: 'Reboot', retryLimit: Math.max(1, strategy.retryLimit ?? REMEDIATION_DEFAULTS.retryLimit), timeoutSeconds: Math.max(100, timeout ?? REMEDIATION_DEFAULTS.timeoutSeconds) },
        ...(host.nodeName ? { nodeName: host.nodeName } : {}),
      },
    });
    if (created) this.deps.log(`${key}: Metal3Remediation taken: HostRemediation ${own} for host ${namespace}/${host.name}`);
  }

  /** Machine (owner, else the same name, as Cluster API names them) → its Metal3Machine → the host it holds. */
  private async hostOf(m: Metal3Remediation): Promise<{ name: string; nodeName?: string }> {
    const ns = encodeURIComponent(m.metadata.namespace ?? '');
    const machineName = m.metadata.ownerReferences?.find((o) => o.kind === 'Machine')?.name ?? m.metadata.name;
    const machine = await this.deps.rest.call<{ spec?: { infrastructureRef?: { kind?: string; name?: string } }; status?: { nodeRef?: { name?: string } } }>(
      'GET',
      `${CAPI}/namespaces/${ns}/machines/${encodeURIComponent(machineName)}`,
    );
    const m3mName = machine.spec?.infrastructureRef?.kind === 'Metal3Machine' ? machine.spec.infrastructureRef.name : undefined;
    if (!m3mName) throw new Error(`Machine ${machineName} has no Metal3Machine infrastructureRef`);
    const m3m = await this.deps.rest.call<KubeObject>('GET', `${INFRA}/namespaces/${ns}/metal3machines/${encodeURIComponent(m3mName)}`);
    const [hostNs, hostName] = (m3m.metadata.annotations?.['metal3.io/BareMetalHost'] ?? '').split('/');
    if (!hostName || hostNs !== m.metadata.namespace) throw new Error(`Metal3Machine ${m3mName} holds no BareMetalHost of namespace ${m.metadata.namespace} (annotation metal3.io/BareMetalHost)`);
    return { name: hostName, ...(machine.status?.nodeRef?.name ? { nodeName: machine.status.nodeRef.name } : {}) };
  }

  /** CAPM3's status fields, from the HostRemediation's. */
  private async mirror(m: Metal3Remediation, hr: HostRemediationObject): Promise<void> {
    const { phase, retryCount, lastRemediated } = hr.status ?? {};
    const want = { ...(phase ? { phase } : {}), ...(retryCount !== undefined ? { retryCount } : {}), ...(lastRemediated ? { lastRemediated } : {}) };
    const have = m.status ?? {};
    if (Object.entries(want).every(([k, v]) => have[k as keyof typeof have] === v)) return;
    const path = `${INFRA}/namespaces/${encodeURIComponent(m.metadata.namespace ?? '')}/metal3remediations/${encodeURIComponent(m.metadata.name)}/status`;
    await this.deps.rest.call('PATCH', path, { body: { status: want }, contentType: MERGE });
  }

  private async deleteHostRemediation(namespace: string, name: string): Promise<void> {
    try {
      await this.deps.rest.call('DELETE', `${hostRemediationsPath(namespace)}/${encodeURIComponent(name)}`);
      this.deps.log(`${namespace}/${name}: its Metal3Remediation is gone; HostRemediation deleted`);
    } catch (err) {
      if (!isKubeError(err, 'not-found')) throw err;
    }
  }
}
