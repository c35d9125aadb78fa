/**
 * The faults: where in the run each one happens (a seeded plan over the
 * run's progress, so a slow machine meets them at the same points of the
 * lifecycle as a fast one) and what each does. The fault proxy in front of
 * Ironic is on all along.
 */
import type { IronicProxy, Intercept, RecordedRequest } from '../support/ironic-proxy';
import { sleep } from '../common';
import type { IronicWatch } from './ironic-watch';
import type { ChaosOptions, ScheduledFault } from './options';
import type { Random } from './random';
import type { ProcessName, StackServices, Supervised } from './supervisor';

export interface PlannedFault {
  kind: ScheduledFault;
  /** Run progress (steps done / all steps) at which it starts. */
  at: number;
  /** Killed processes: down this long. The BMC fault: how long the BMCs stop answering. */
  ms: number;
}

export interface FaultRecord extends PlannedFault {
  startedAt?: number;
  endedAt?: number;
  /** What was done, e.g. which processes were killed. */
  detail: string;
  error?: string;
}

/**
 * Ironic lost its database: when, which hosts were provisioned just before
 * (their node active and the host listed provisioned or deprovisioning: these
 * must be adopted, never deployed again), and which had an active node while
 * their provisioning was still running (metalflow had not seen the deploy end:
 * deploying again is allowed).
 */
export interface Wipe {
  at: number;
  active: string[];
  midProvisioning: string[];
}

/**
 * Each scheduled kind `faultsPerKind` times. The empty-database restart lands
 * in the middle of the run (progress 0.35–0.65), where most hosts are
 * provisioned, so adoption after it is tested on many hosts; the others are
 * spread over 0.05–0.85 in equal slots, kinds shuffled into them.
 */
export function planFaults(opts: Pick<ChaosOptions, 'faults' | 'faultsPerKind' | 'pauseSeconds' | 'blackholeSeconds'>, rng: Random): PlannedFault[] {
  const kinds = opts.faults.filter((k): k is ScheduledFault => k !== 'ironic-proxy');
  const ms = (k: ScheduledFault): number => 1000 * (k === 'bmc' ? rng.between(...opts.blackholeSeconds) : rng.between(...opts.pauseSeconds));
  const plan: PlannedFault[] = [];
  const spread = rng.shuffle(kinds.filter((k) => k !== 'ironic-empty-db').flatMap((k) => Array<ScheduledFault>(opts.faultsPerKind).fill(k)));
  const slot = 0.8 / Math.max(1, spread.length);
  spread.forEach((kind, i) => plan.push({ kind, at: 0.05 + slot * (i + rng.next()), ms: ms(kind) }));
  if (kinds.includes('ironic-empty-db')) {
    for (let i = 0; i < opts.faultsPerKind; i++) plan.push({ kind: 'ironic-empty-db', at: rng.between(0.35, 0.65), ms: 0 });
  }
  return plan.sort((a, b) => a.at - b.at);
}

/**
 * The fault proxy's choice for one request: most pass; of the rest a third
 * each 5xx, 409 "node locked" (only on changes: Ironic never answers a read
 * so; a read gets a 5xx instead), no answer.
 */
export function ironicFaults(share: number, noAnswerMs: number, rng: Random): (r: RecordedRequest) => Intercept | undefined {
  return (r) => {
    if (rng.next() >= share) return undefined;
    const x = rng.next();
    if (x < 1 / 3 || (x < 2 / 3 && r.method === 'GET')) return { kind: 'answer', status: rng.pick([500, 502, 503]), faultstring: 'chaos: injected server error' };
    if (x < 2 / 3) return { kind: 'answer', status: 409, faultstring: 'Node is locked by host chaos-proxy, please retry after the current operation is completed.' };
    // Half never reach Ironic, half reach it and lose their answer.
    return { kind: 'no-answer', ms: noAnswerMs, forward: rng.next() < 0.5 };
  };
}

/** A BMC proxy that can stop answering: requests hang until the window ends, then lose their connection. */
export class Blackhole {
  private until = 0;

  constructor(proxy: IronicProxy) {
    proxy.interceptor = () => {
      const left = this.until - Date.now();
      return left > 0 ? { kind: 'no-answer', ms: left, forward: false } : undefined;
    };
  }

  for(ms: number): void {
    this.until = Date.now() + ms;
  }
}

export interface FaultContext {
  processes: Partial<Record<ProcessName, Supervised>>;
  stack: StackServices;
  blackholes: Blackhole[];
  ironic: IronicWatch;
  /** Run progress as placed for this kind of fault (the BMC fault follows the direct hosts' own). */
  progress: (kind: ScheduledFault) => number;
  /** Each host's provisioning state as the fleet last listed it. */
  listedStates: () => Map<string, string>;
  /** BMC proxies whose direct host is in the middle of a step now (talking to its BMC). */
  busyBmcs: () => number[];
  rng: Random;
  log: (line: string) => void;
}

export class FaultRunner {
  readonly records: FaultRecord[];
  readonly wipes: Wipe[] = [];
  private finished = false;

  constructor(
    plan: PlannedFault[],
    private readonly ctx: FaultContext,
  ) {
    this.records = plan.map((p) => ({ ...p, detail: 'not injected: the run ended first' }));
  }

  /**
   * Starts each fault once its point is reached. Faults on different targets
   * may overlap (the worker killed while Temporal is down); two on one target
   * (Ironic killed, Ironic emptied) wait for each other. Returns once every
   * started fault has ended (its processes restarted), all ran or not.
   */
  async run(): Promise<void> {
    const chains = new Map<string, Promise<void>>();
    // Each fault waits for its own point (the BMC fault's is on another measure, so plan order is not firing order).
    await Promise.all(
      this.records.map(async (f) => {
        while (!this.finished && this.ctx.progress(f.kind) < f.at) await sleep(250);
        if (this.finished) return;
        const target = f.kind === 'ironic-empty-db' ? 'ironic' : f.kind;
        const mine = (chains.get(target) ?? Promise.resolve()).then(() => this.injectOne(f));
        chains.set(target, mine);
        await mine;
      }),
    );
  }

  private async injectOne(f: FaultRecord): Promise<void> {
    // Queued behind a fault on the same target while the run ended: nothing left to disturb.
    if (this.finished) return;
    f.startedAt = Date.now();
    this.ctx.log(`fault ${f.kind} at progress ${this.ctx.progress(f.kind).toFixed(2)} (planned ${f.at.toFixed(2)})`);
    try {
      f.detail = await this.inject(f);
    } catch (err) {
      f.error = err instanceof Error ? err.message : String(err);
      f.detail = 'failed to inject';
      this.ctx.log(`fault ${f.kind} failed: ${f.error}`);
    }
    f.endedAt = Date.now();
  }

  finish(): void {
    this.finished = true;
  }

  private async killFor(names: ProcessName[], ms: number): Promise<string> {
    const procs = names.map((n) => this.ctx.processes[n]).filter((p): p is Supervised => p !== undefined);
    await Promise.all(procs.map((p) => p.kill()));
    await sleep(ms);
    for (const p of procs) p.start();
    return `SIGKILL ${procs.map((p) => p.spec.name).join(', ')}; restarted after ${(ms / 1000).toFixed(1)} s`;
  }

  private async inject(f: FaultRecord): Promise<string> {
    const { stack } = this.ctx;
    switch (f.kind) {
      case 'worker':
        return this.killFor(['worker-api', 'worker-k8s'], f.ms);
      case 'api':
        return this.killFor(['api'], f.ms);
      case 'controller':
        return this.killFor(['controller'], f.ms);
      case 'temporal':
      case 'ironic': {
        await stack.kill(f.kind);
        await sleep(f.ms);
        await stack.start(f.kind);
        return `SIGKILL ${f.kind} (process group); started again after ${(f.ms / 1000).toFixed(1)} s`;
      }
      case 'ironic-empty-db': {
        const nodes = (await this.ctx.ironic.read()).filter((n) => n.state === 'active').map((n) => n.host);
        const listed = this.ctx.listedStates();
        const settled = (host: string): boolean => ['provisioned', 'deprovisioning'].includes(listed.get(host) ?? '');
        const wipe: Wipe = { at: Date.now(), active: nodes.filter(settled), midProvisioning: nodes.filter((h) => !settled(h)) };
        this.wipes.push(wipe);
        await stack.restartIronicEmpty();
        return `Ironic restarted with an empty database; ${wipe.active.length} hosts were provisioned, ${wipe.midProvisioning.length} more had an active node mid-provisioning`;
      }
      case 'bmc': {
        // A BMC nobody talks to can be silent unnoticed: wait (up to 5 min) for direct hosts in the middle of a step.
        const deadline = Date.now() + 300_000;
        while (this.ctx.busyBmcs().length === 0 && Date.now() < deadline && !this.finished) await sleep(100);
        const busy = this.ctx.busyBmcs();
        const chosen = busy.length > 0 ? busy : this.ctx.rng.shuffle(this.ctx.blackholes.map((_, i) => i)).slice(0, Math.ceil(this.ctx.blackholes.length / 2));
        for (const i of chosen) this.ctx.blackholes[i]!.for(f.ms);
        await sleep(f.ms);
        return `BMCs ${chosen.join(', ')} of ${this.ctx.blackholes.length} did not answer for ${(f.ms / 1000).toFixed(1)} s${busy.length ? ' (their hosts mid-step)' : ''}`;
      }
    }
  }
}
