/**
 * `npm run bench -- --driver k8s`: the lifecycle as Metal3 users drive it,
 * through BareMetalHosts on a real kube-apiserver with the controller between
 * them and the host workflows. Each host is a BMC credentials Secret, a
 * user-data Secret and a BareMetalHost (created as the API driver's PUT
 * creates it), then `spec.image` set, set to null, and the object deleted:
 * the chaos suite's Kubernetes-mode calls (bench/chaos/drivers.ts).
 *
 * A host has reached a phase when its object's `status.provisioning.state`
 * says so ("gone": the object is no longer there, its finalizer removed once
 * the workflow completed the delete), which is what `kubectl wait` on the
 * object sees. The driver learns it from one watch of the namespace's
 * BareMetalHosts (the controller's informer), not from looks: no request per
 * tick, none at rest, and the watch's cost in the API server grows only with
 * the status writes it relays.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { Client, type Connection } from '@temporalio/client';
import { KubeRest } from '../clients/kubernetes/kube-rest';
import { connectTemporalClient } from '../clients/temporal/connection';
import { Informer, type KubeObject } from '../k8s/controller/informer';
import { KubeModeDriver } from './chaos/drivers';
import { credentialsName, userDataName, type ChaosHost } from './chaos/hosts';
import { CREDENTIALS, IMAGE, pool, type BenchHost, type Phase } from './common';
import { abnormallyEndedHosts } from './host-look';
import type { ApiCall } from './metalflow';

export interface K8sDriverOptions {
  kubeconfig: string;
  temporalAddress: string;
  namespace: string;
  concurrency: number;
  redfish: boolean;
  phaseTimeoutMs: number;
}

/** A BareMetalHost's `status.provisioning` as the watch last saw it: its state and its Ironic node (`ID`). */
export interface BmhProvisioning {
  state?: string;
  ID?: string;
}

interface Bmh extends KubeObject {
  status?: { provisioning?: BmhProvisioning; operationalStatus?: string; errorMessage?: string };
}

interface Waiter {
  target: string | 'gone';
  resolve: () => void;
}

/** What each phase asks of the object, and the state it waits for. */
const TARGET: Record<Phase, string | 'gone'> = { available: 'available', provisioned: 'provisioned', deprovisioned: 'available', gone: 'gone' };

export class K8sDriver {
  /** The calls that start an operation (create, set image), for API call -> first activity. */
  readonly calls: ApiCall[] = [];
  readonly reached = new Map<string, Partial<Record<Phase, number>>>();
  /** Kept for the result's shape: the API server is retried inside the calls (bench/chaos/drivers.ts). */
  readonly serverErrors: { host: string; phase: Phase; method: string; status: number; message: string }[] = [];
  private readonly waiters = new Map<string, Waiter>();
  /** Told the name of every host whose object the watch saw change (bench/ironic-loss.ts times re-registrations on it). */
  onChange?: (name: string) => void;
  private informer?: Informer<Bmh>;
  private connection?: Connection;

  private constructor(
    private readonly opts: K8sDriverOptions,
    private readonly kube: KubeModeDriver,
    private readonly rest: KubeRest,
  ) {}

  static async create(opts: K8sDriverOptions): Promise<K8sDriver> {
    const kc = new KubeConfig();
    kc.loadFromFile(opts.kubeconfig);
    return new K8sDriver(opts, await KubeModeDriver.create(opts.kubeconfig, opts.namespace), await KubeRest.create(kc, { connections: 2 }));
  }

  private key(name: string): string {
    return `${this.opts.namespace}/${name}`;
  }

  /** The watch starts before the first create, so that no status write is missed. */
  private async watching(): Promise<void> {
    if (this.informer) return;
    this.informer = new Informer<Bmh>(this.rest, `/apis/metal3.io/v1alpha1/namespaces/${this.opts.namespace}/baremetalhosts`, (key) => this.changed(key), {
      log: (m) => console.error(`[bench k8s] ${m}`),
    });
    await this.informer.start();
  }

  private there(key: string, target: string | 'gone'): boolean {
    const obj = this.informer?.cache.get(key);
    return target === 'gone' ? obj === undefined : obj?.status?.provisioning?.state === target;
  }

  /** The host's object's provisioning status as the watch last saw it; undefined when there is no such object. */
  provisioning(name: string): BmhProvisioning | undefined {
    const obj = this.informer?.cache.get(this.key(name));
    return obj ? (obj.status?.provisioning ?? {}) : undefined;
  }

  private changed(key: string): void {
    this.onChange?.(key.slice(this.opts.namespace.length + 1));
    const w = this.waiters.get(key);
    if (w && this.there(key, w.target)) {
      this.waiters.delete(key);
      w.resolve();
    }
  }

  /** The host as the chaos suite's Kubernetes-mode calls take it: the API driver's spec, image and secrets. */
  private chaosHost(h: BenchHost): ChaosHost {
    const base = { index: h.index, name: h.name, namespace: this.opts.namespace, key: this.key(h.name) };
    return {
      ...base,
      mode: 'k8s',
      kind: 'fake',
      spec: {
        bmc: { address: h.bmcAddress, credentialsName: credentialsName(base) },
        bootMACAddress: h.mac,
        online: true,
        userData: { name: userDataName(base), namespace: this.opts.namespace },
        ...(this.opts.redfish ? { automatedCleaningMode: 'disabled' as const } : {}),
      },
      image: IMAGE,
      password: CREDENTIALS.password,
      userData: h.userData,
    };
  }

  private async timed(h: BenchHost, phase: Phase, method: string, path: string, send: () => Promise<void>): Promise<void> {
    const sentAt = Date.now();
    await send();
    this.calls.push({ host: h.name, phase, method, path, status: 200, sentAt, respondedAt: Date.now() });
  }

  private async until(h: BenchHost, phase: Phase): Promise<void> {
    const key = this.key(h.name);
    const target = TARGET[phase];
    let timer: NodeJS.Timeout | undefined;
    const reached = new Promise<void>((resolve) => {
      if (this.there(key, target)) return resolve();
      this.waiters.set(key, { target, resolve });
    });
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.opts.phaseTimeoutMs);
    });
    try {
      if ((await Promise.race([reached, timeout])) === 'timeout') {
        this.waiters.delete(key);
        throw new Error(`host ${h.name} did not reach ${target} within ${this.opts.phaseTimeoutMs / 1000} s: ${await this.kube.describe(this.chaosHost(h))}`);
      }
    } finally {
      clearTimeout(timer);
    }
    const r = this.reached.get(h.name) ?? {};
    r[phase] = Date.now();
    this.reached.set(h.name, r);
  }

  lastReached(phase: Phase): number {
    let last = 0;
    for (const r of this.reached.values()) last = Math.max(last, r[phase] ?? 0);
    return last;
  }

  async runPhase(phase: Phase, hosts: BenchHost[]): Promise<void> {
    await this.watching();
    const bmh = (h: BenchHost): string => `/apis/metal3.io/v1alpha1/namespaces/${this.opts.namespace}/baremetalhosts/${h.name}`;
    await pool(hosts, this.opts.concurrency, async (h) => {
      const ch = this.chaosHost(h);
      switch (phase) {
        case 'available':
          await this.timed(h, phase, 'POST', bmh(h), () => this.kube.create(ch));
          break;
        case 'provisioned':
          await this.timed(h, phase, 'PATCH', bmh(h), () => this.kube.setImage(ch));
          break;
        case 'deprovisioned':
          await this.timed(h, phase, 'PATCH', bmh(h), () => this.kube.clearImage(ch));
          break;
        case 'gone':
          await this.timed(h, phase, 'DELETE', bmh(h), () => this.kube.remove(ch));
          break;
      }
      await this.until(h, phase);
    });
    // As the API driver: a host workflow that failed or was terminated has reached nothing.
    this.connection ??= await connectTemporalClient({ address: this.opts.temporalAddress });
    const ended = await abnormallyEndedHosts(new Client({ connection: this.connection }), this.opts.namespace);
    if (ended.length > 0) throw new Error(`phase ${phase}: ${ended.length} host workflow(s) ended abnormally: ${ended.slice(0, 5).join(', ')}`);
  }

  /** Nothing to pause: the watch asks nothing, and relays nothing while the hosts rest. */
  async pauseLooks(): Promise<void> {}

  resumeLooks(): void {}

  async stop(): Promise<void> {
    this.informer?.stop();
    await this.connection?.close();
  }
}
