/**
 * Leader election through a coordination.k8s.io Lease, so that of several
 * controller replicas only one drives hosts. Updates are optimistic
 * (resourceVersion), so two candidates can never both win a round.
 *
 * As client-go's leaderelection: another holder's lease is counted as expired
 * from the local time this process first saw its current record, never from
 * the renewTime it wrote (the two clocks need not agree), and the holder gives
 * the lease up once it has not renewed for the renew deadline (two thirds of
 * the lease), so it has stopped before any other replica may take over.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { isKubeError } from '../../clients/kubernetes/kube-error';
import { KubeRest } from '../../clients/kubernetes/kube-rest';

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
  /** How long the holder keeps leading without a successful renewal (two thirds of the lease); below the lease. */
  renewDeadlineMs?: number;
  /** How often a candidate tries, and the holder renews (a fifth of the lease, at most 2 s). */
  retryMs?: number;
  /** The local clock (tests). */
  now?: () => number;
}

const microTime = (d: Date): string => d.toISOString().replace('Z', '000Z');

export class LeaderElector {
  private renewTimer?: NodeJS.Timeout;
  private stopped = false;
  private holding?: Promise<void>;
  private markHeld?: () => void;
  /** The lease's record as last read, and the local time it was first read so. */
  private observed?: { record: string; at: number };

  /**
   * An elector on connections of its own: renewals that queued behind the controller's reconciles
   * on a shared pool would miss the renew deadline exactly when the controller is busiest.
   */
  static async connect(kc: KubeConfig, opts: LeaderOptions): Promise<LeaderElector> {
    return new LeaderElector(await KubeRest.create(kc, { connections: 2 }), opts);
  }

  constructor(
    private readonly rest: KubeRest,
    private readonly opts: LeaderOptions,
  ) {
    const lease = this.leaseMs;
    if (this.renewDeadlineMs >= lease) throw new Error(`leader election: the renew deadline (${this.renewDeadlineMs} ms) must be below the lease (${lease} ms)`);
  }

  private get leaseMs(): number {
    return (this.opts.leaseSeconds ?? 15) * 1000;
  }

  private get renewDeadlineMs(): number {
    return this.opts.renewDeadlineMs ?? Math.floor((this.leaseMs * 2) / 3);
  }

  private get retryMs(): number {
    return this.opts.retryMs ?? Math.min(2000, Math.floor(this.leaseMs / 5));
  }

  private now(): number {
    return this.opts.now?.() ?? Date.now();
  }

  private get path(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${this.opts.namespace}/leases`;
  }

  private async tryAcquire(signal?: AbortSignal): Promise<boolean> {
    const seconds = this.opts.leaseSeconds ?? 15;
    const now = new Date();
    const local = this.now();
    let lease: Lease | undefined;
    try {
      lease = await this.rest.call<Lease>('GET', `${this.path}/${this.opts.name}`, signal ? { signal } : {});
    } catch (err) {
      if (!isKubeError(err, 'not-found')) throw err;
    }
    const spec = { holderIdentity: this.opts.identity, leaseDurationSeconds: seconds, renewTime: microTime(now) };
    try {
      if (!lease) {
        await this.rest.call('POST', this.path, {
          body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: this.opts.name, namespace: this.opts.namespace }, spec: { ...spec, acquireTime: microTime(now), leaseTransitions: 0 } },
          ...(signal ? { signal } : {}),
        });
        return true;
      }
      const held = lease.spec.holderIdentity;
      const { holderIdentity, leaseDurationSeconds, acquireTime, renewTime, leaseTransitions } = lease.spec;
      const record = JSON.stringify([holderIdentity, leaseDurationSeconds, acquireTime, renewTime, leaseTransitions]);
      if (this.observed?.record !== record) this.observed = { record, at: local };
      const expired = this.observed.at + (leaseDurationSeconds ?? seconds) * 1000 <= local;
      if (held && held !== this.opts.identity && !expired) return false;
      const transitions = (lease.spec.leaseTransitions ?? 0) + (held === this.opts.identity ? 0 : 1);
      await this.rest.call('PUT', `${this.path}/${this.opts.name}`, {
        body: {
          ...lease,
          spec: { ...lease.spec, ...spec, acquireTime: held === this.opts.identity ? lease.spec.acquireTime : microTime(now), leaseTransitions: transitions },
        },
        ...(signal ? { signal } : {}),
      });
      return true;
    } catch (err) {
      // Another candidate won this round (409 on create or update).
      if (isKubeError(err, 'conflict')) return false;
      throw err;
    }
  }

  /** Resolves when the current campaign has won the lease. */
  held(): Promise<void> {
    return this.holding ?? Promise.reject(new Error('acquire() was not called'));
  }

  /** Resolves once this process holds the lease; `onLost` runs if it is ever lost. */
  async acquire(onLost: (why: string) => void): Promise<void> {
    this.holding = new Promise<void>((resolve) => (this.markHeld = resolve));
    let renewed = 0;
    for (;;) {
      if (this.stopped) throw new Error('leader election stopped');
      const started = this.now();
      try {
        if (await this.tryAcquire()) {
          renewed = started;
          break;
        }
      } catch {
        // API server unreachable: keep trying
      }
      await new Promise((r) => setTimeout(r, this.retryMs));
    }
    this.markHeld?.();
    // Counted from when each successful renewal was sent: others count the lease from when they read it, later.
    let due = 0;
    const renew = async (): Promise<void> => {
      if (this.stopped) return;
      const started = this.now();
      const left = renewed + this.renewDeadlineMs - started;
      let outcome: 'renewed' | 'taken' | 'failed' = 'failed';
      let failure = 'no time left to try';
      if (left > 0) {
        const deadline = new AbortController();
        let timer: NodeJS.Timeout | undefined;
        // Raced, not only aborted: undici settles a request still queued for a connection only once it is sent.
        const late = new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            deadline.abort();
            reject(new Error('renewal past the renew deadline'));
          }, left);
        });
        try {
          outcome = (await Promise.race([this.tryAcquire(deadline.signal), late])) ? 'renewed' : 'taken';
        } catch (err) {
          // unreachable, or past the deadline: counted below
          failure = err instanceof Error ? err.message : String(err);
        } finally {
          clearTimeout(timer);
        }
      }
      if (outcome === 'renewed') renewed = started;
      if (outcome === 'taken') return this.lose(onLost, 'another replica holds it');
      const since = this.now() - renewed;
      // How late this renewal's timer fired tells a busy event loop from a slow API server.
      if (since >= this.renewDeadlineMs) return this.lose(onLost, `not renewed for ${since} ms (renew deadline ${this.renewDeadlineMs} ms; last try: ${failure}; its timer fired ${Math.max(0, started - due)} ms late)`);
      due = this.now() + this.retryMs;
      this.renewTimer = setTimeout(() => void renew(), this.retryMs);
    };
    due = this.now() + this.retryMs;
    this.renewTimer = setTimeout(() => void renew(), this.retryMs);
  }

  private lose(onLost: (why: string) => void, why: string): void {
    clearTimeout(this.renewTimer);
    if (!this.stopped) onLost(why);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.renewTimer);
  }
}
