/**
 * How the chaos run asks for each step and reads where hosts are, in each
 * mode: the HTTP API (PUT host, image, POST reboot, DELETE) or the CRD shim
 * (Secrets and BareMetalHosts on the API server, the image patched in and
 * out, the reboot.metal3.io annotation, kubectl-style delete). Both list
 * their whole fleet in one request per tick.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { KubeError } from '../../clients/kubernetes/kube-error';
import { KubeRest } from '../../clients/kubernetes/kube-rest';
import type { HostView } from '../../contracts/host';
import type { ApiClient } from '../api-client';
import { sleep } from '../common';
import { credentialsName, networkDataName, userDataName, type ChaosHost, type HostMode } from './hosts';

/** What one list says about a host. */
export interface Seen {
  state: string;
  /** API mode: the host workflow ended abnormally (its status), as the list shows it. */
  ended?: string;
  /** Kubernetes mode: the reboot.metal3.io annotation is still on the object. */
  rebootAnnotation?: boolean;
  error?: string;
}

export interface ModeDriver {
  readonly mode: HostMode;
  create(h: ChaosHost): Promise<void>;
  setImage(h: ChaosHost): Promise<void>;
  reboot(h: ChaosHost): Promise<void>;
  clearImage(h: ChaosHost): Promise<void>;
  remove(h: ChaosHost): Promise<void>;
  /** Every host of the mode's namespace by name; throws when the list cannot be read now. */
  list(): Promise<Map<string, Seen>>;
  /** Has the reboot asked for run (and nothing of it is left waiting)? */
  rebootDone(h: ChaosHost, seen: Seen | undefined): Promise<boolean>;
  /** A line saying where the host stands, for a stuck host's report. */
  describe(h: ChaosHost): Promise<string>;
}

/** A change the peer refused (4xx): the host cannot go on. */
export class RefusedError extends Error {}

export class ApiModeDriver implements ModeDriver {
  readonly mode = 'api' as const;
  /** 5xx answers and unanswered requests, each sent again. */
  retries = 0;
  /** Per host, each request sent again and why: a non-idempotent one sent twice explains a duplicate. */
  readonly resent = new Map<string, string[]>();

  constructor(
    private readonly api: ApiClient,
    private readonly namespace: string,
  ) {}

  private path(h: ChaosHost, rest = ''): string {
    return `/v1/namespaces/${h.namespace}/hosts/${h.name}${rest}`;
  }

  /** Patient through a Temporal restart and a killed API: about five minutes of attempts. */
  private async send(h: ChaosHost, method: 'PUT' | 'POST' | 'DELETE', path: string, body?: unknown, ok: number[] = [], headers: Record<string, string> = {}): Promise<void> {
    const r = await this.api.send(method, path, body, {
      attempts: 25,
      headers,
      onRetry: (status, message) => {
        this.retries += 1;
        const list = this.resent.get(h.key) ?? [];
        list.push(`${new Date().toISOString().slice(11, 23)} ${method} ${path.slice(path.lastIndexOf(h.name))} sent again after ${status ? `HTTP ${status}` : `no answer (${message.slice(0, 80)})`}`);
        this.resent.set(h.key, list);
      },
    });
    if (r.status >= 300 && !ok.includes(r.status)) throw new RefusedError(`${method} ${path}: HTTP ${r.status} ${r.json?.message ?? ''}`);
  }

  create(h: ChaosHost): Promise<void> {
    return this.send(h, 'PUT', this.path(h), {
      spec: h.spec,
      credentials: { username: 'admin', password: h.password },
      ...(h.userData ? { userData: h.userData } : {}),
      ...(h.networkData ? { networkData: h.networkData } : {}),
    });
  }

  setImage(h: ChaosHost): Promise<void> {
    return this.send(h, 'PUT', this.path(h, '/image'), h.image);
  }

  /** The one request that is not a desired state: its key makes a resend (the API died before it answered) the same reboot. */
  reboot(h: ChaosHost): Promise<void> {
    return this.send(h, 'POST', this.path(h, '/reboot'), { mode: 'hard' }, [], { 'idempotency-key': `chaos-${h.key}-reboot` });
  }

  clearImage(h: ChaosHost): Promise<void> {
    return this.send(h, 'DELETE', this.path(h, '/image'));
  }

  remove(h: ChaosHost): Promise<void> {
    // A retried delete may find the host already gone.
    return this.send(h, 'DELETE', this.path(h), undefined, [404]);
  }

  async list(): Promise<Map<string, Seen>> {
    const r = await this.api.request('GET', `/v1/hosts?namespace=${this.namespace}`);
    if (r.status !== 200) throw new Error(`GET /v1/hosts: HTTP ${r.status}`);
    const out = new Map<string, Seen>();
    for (const item of r.json.items as { name: string; provisioningState: string; operationalStatus: string; workflowEnded?: string }[]) {
      out.set(item.name, { state: item.provisioningState, ...(item.workflowEnded ? { ended: item.workflowEnded } : {}) });
    }
    return out;
  }

  async rebootDone(h: ChaosHost): Promise<boolean> {
    const r = await this.api.request('GET', this.path(h));
    if (r.status !== 200) return false;
    const v = r.json as HostView;
    return !v.power.reboot && !v.currentOperation && v.operations.some((o) => o.kind === 'reboot' && o.outcome === 'succeeded');
  }

  async describe(h: ChaosHost): Promise<string> {
    const r = await this.api.request('GET', this.path(h)).catch((err: unknown) => ({ status: 0, json: { message: String(err) } }));
    if (r.status !== 200) return `GET: HTTP ${r.status} ${r.json?.message ?? ''}`;
    const v = r.json as HostView & { workflowEnded?: { status: string } };
    return describeView(v.status.provisioning.state, v.status.operationalStatus, v.status.errorMessage, v.currentOperation?.kind, v.workflowEnded?.status);
  }
}

function describeView(state: string, operational: string, error: string, operation: string | undefined, ended?: string): string {
  return `state "${state}", ${operational}${error ? ` ("${error}")` : ''}, operation ${operation ?? 'none'}${ended ? `, workflow ${ended}` : ''}`;
}

interface Bmh {
  metadata: { name: string; annotations?: Record<string, string> };
  status?: { provisioning?: { state?: string }; operationalStatus?: string; errorMessage?: string };
}

const REBOOT = 'reboot.metal3.io';
const MERGE = 'application/merge-patch+json';

export class KubeModeDriver implements ModeDriver {
  readonly mode = 'k8s' as const;

  private constructor(
    private readonly rest: KubeRest,
    private readonly namespace: string,
  ) {}

  static async create(kubeconfig: string, namespace: string): Promise<KubeModeDriver> {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    return new KubeModeDriver(await KubeRest.create(kc), namespace);
  }

  /** The API server is no fault target, but a busy one may be slow: a few attempts. */
  private async call<T>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown, contentType?: string, ok: number[] = []): Promise<T | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.rest.call<T>(method, path, { body, contentType });
      } catch (err) {
        if (err instanceof KubeError && ok.includes(err.status)) return undefined;
        if (err instanceof KubeError && err.status < 500 && err.status !== 429) throw new RefusedError(err.message);
        if (attempt >= 8) throw err;
        await sleep(500 * attempt);
      }
    }
  }

  private bmhPath(name = ''): string {
    return `/apis/metal3.io/v1alpha1/namespaces/${this.namespace}/baremetalhosts${name ? `/${name}` : ''}`;
  }

  private async secret(name: string, data: Record<string, string>): Promise<void> {
    await this.call('POST', `/api/v1/namespaces/${this.namespace}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name }, type: 'Opaque', stringData: data }, undefined, [409]);
  }

  async prepare(): Promise<void> {
    await this.call('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: this.namespace } }, undefined, [409]);
  }

  async create(h: ChaosHost): Promise<void> {
    await this.secret(credentialsName(h), { username: 'admin', password: h.password });
    if (h.userData) await this.secret(userDataName(h), { userData: h.userData });
    if (h.networkData) await this.secret(networkDataName(h), { networkData: h.networkData });
    const doc = { apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', metadata: { name: h.name }, spec: h.spec };
    await this.call('POST', this.bmhPath(), doc, undefined, [409]);
  }

  private async patch(h: ChaosHost, body: unknown): Promise<void> {
    await this.call('PATCH', this.bmhPath(h.name), body, MERGE);
  }

  setImage(h: ChaosHost): Promise<void> {
    return this.patch(h, { spec: { image: h.image } });
  }

  reboot(h: ChaosHost): Promise<void> {
    return this.patch(h, { metadata: { annotations: { [REBOOT]: '{"mode":"hard"}' } } });
  }

  clearImage(h: ChaosHost): Promise<void> {
    return this.patch(h, { spec: { image: null } });
  }

  async remove(h: ChaosHost): Promise<void> {
    await this.call('DELETE', this.bmhPath(h.name), undefined, undefined, [404]);
  }

  async list(): Promise<Map<string, Seen>> {
    const list = await this.rest.call<{ items: Bmh[] }>('GET', this.bmhPath());
    const out = new Map<string, Seen>();
    for (const b of list.items) {
      out.set(b.metadata.name, {
        state: b.status?.provisioning?.state ?? '',
        rebootAnnotation: b.metadata.annotations?.[REBOOT] !== undefined,
        ...(b.status?.errorMessage ? { error: b.status.errorMessage } : {}),
      });
    }
    return out;
  }

  /** The controller removes the one-shot annotation once the workflow says its reboot has run. */
  rebootDone(_h: ChaosHost, seen: Seen | undefined): Promise<boolean> {
    return Promise.resolve(seen !== undefined && seen.rebootAnnotation === false);
  }

  async describe(h: ChaosHost): Promise<string> {
    const b = await this.call<Bmh>('GET', this.bmhPath(h.name), undefined, undefined, [404]).catch((err: unknown) => String(err));
    if (typeof b === 'string') return b;
    if (!b) return 'BareMetalHost not found';
    const annotations = Object.keys(b.metadata.annotations ?? {}).join(',');
    return `${describeView(b.status?.provisioning?.state ?? '', b.status?.operationalStatus ?? '', b.status?.errorMessage ?? '', undefined)}${annotations ? `, annotations ${annotations}` : ''}`;
  }

  /** What a run left in its namespace: hosts deleted with their finalizers dropped (no controller runs any more). */
  async clear(): Promise<void> {
    for (const name of (await this.list()).keys()) {
      await this.call('PATCH', this.bmhPath(name), { metadata: { finalizers: null } }, MERGE, [404]);
      await this.call('DELETE', this.bmhPath(name), undefined, undefined, [404]);
    }
  }
}
