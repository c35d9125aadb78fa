/**
 * Leader election through a coordination.k8s.io Lease, so that of several
 * controller replicas only one drives hosts. Updates are optimistic
 * (resourceVersion), so two candidates can never both win a round.
 */
import { KubeError } from '../../clients/kubernetes/kube-error';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';

interface Lease {
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

export interface LeaderOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseSeconds?: number;
  retryMs?: number;
}

const microTime = (d: Date): string => d.toISOString().replace('Z', '000Z');

export class LeaderElector {
  private renewTimer?: NodeJS.Timeout;
  private stopped = false;
  private holding?: Promise<void>;
  private markHeld?: () => void;

  constructor(
    private readonly rest: KubeRest,
    private readonly opts: LeaderOptions,
  ) {}

  private get path(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${this.opts.namespace}/leases`;
  }

  private async tryAcquire(): Promise<boolean> {
    const seconds = this.opts.leaseSeconds ?? 15;
    const now = new Date();
    let lease: Lease | undefined;
    try {
      lease = await this.rest.call<Lease>('GET', `${this.path}/${this.opts.name}`);
    } catch (err) {
      if (!(err instanceof KubeError && err.status === 404)) throw err;
    }
    const spec = { holderIdentity: this.opts.identity, leaseDurationSeconds: seconds, renewTime: microTime(now) };
    try {
      if (!lease) {
        await this.rest.call('POST', this.path, {
          body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: this.opts.name, namespace: this.opts.namespace }, spec: { ...spec, acquireTime: microTime(now), leaseTransitions: 0 } },
        });
        return true;
      }
      const held = lease.spec.holderIdentity;
      const renewed = lease.spec.renewTime ? Date.parse(lease.spec.renewTime) : 0;
      const expired = renewed + (lease.spec.leaseDurationSeconds ?? seconds) * 1000 < now.getTime();
      if (held && held !== this.opts.identity && !expired) return false;
      const transitions = (lease.spec.leaseTransitions ?? 0) + (held === this.opts.identity ? 0 : 1);
      await this.rest.call('PUT', `${this.path}/${this.opts.name}`, {
        body: {
          ...lease,
          spec: { ...lease.spec, ...spec, acquireTime: held === this.opts.identity ? lease.spec.acquireTime : microTime(now), leaseTransitions: transitions },
        },
      });
      return true;
    } catch (err) {
      // Another candidate won this round (409 on create or update).
      if (err instanceof KubeError && err.status === 409) return false;
      throw err;
    }
  }

  /** Resolves when the current campaign has won the lease. */
  held(): Promise<void> {
    return this.holding ?? Promise.reject(new Error('acquire() was not called'));
  }

  /** Resolves once this process holds the lease; `onLost` runs if it is ever lost. */
  async acquire(onLost: () => void): Promise<void> {
    this.holding = new Promise<void>((resolve) => (this.markHeld = resolve));
    const retry = this.opts.retryMs ?? 2000;
    for (;;) {
      if (this.stopped) throw new Error('leader election stopped');
      try {
        if (await this.tryAcquire()) break;
      } catch {
        // API server unreachable: keep trying
      }
      await new Promise((r) => setTimeout(r, retry));
    }
    this.markHeld?.();
    const renewEvery = ((this.opts.leaseSeconds ?? 15) * 1000) / 3;
    let failures = 0;
    this.renewTimer = setInterval(() => {
      void this.tryAcquire().then(
        (held) => {
          failures = held ? 0 : failures + 3;
          if (failures >= 3) this.lose(onLost);
        },
        () => {
          failures += 1;
          if (failures >= 3) this.lose(onLost);
        },
      );
    }, renewEvery);
  }

  private lose(onLost: () => void): void {
    clearInterval(this.renewTimer);
    if (!this.stopped) onLost();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.renewTimer);
  }
}
