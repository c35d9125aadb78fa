/**
 * Each host's lifecycle (create → available → provisioned → rebooted →
 * deprovisioned → gone), all hosts at once, each at its own pace, read from
 * one shared look at the fleet per tick: the mode drivers' lists plus
 * Temporal's visibility of running operation children (a host has reached a
 * state when it shows it with no operation running, on two looks in a row).
 * A host that misses a step's deadline is stuck; one that vanishes before its
 * delete is lost. Progress (steps done / steps in all) places the faults.
 */
import type { Client } from '@temporalio/client';
import { hostsWithRunningOperation } from '../metalflow';
import { Ticker } from '../ticker';
import type { ModeDriver, Seen } from './drivers';
import { STEPS, type ChaosHost, type HostMode, type Step } from './hosts';

export interface StepRecord {
  requestedAt: number;
  reachedAt?: number;
}

export interface HostRecord {
  key: string;
  mode: HostMode;
  kind: ChaosHost['kind'];
  steps: Partial<Record<Step, StepRecord>>;
  outcome: 'done' | 'stuck' | 'lost' | 'running';
  /** Stuck or lost: at which step, and what the host showed. */
  detail?: string;
}

interface Look {
  at: number;
  busy: Set<string>;
  seen: Map<string, Seen>;
}

const TARGET: Record<Exclude<Step, 'rebooted' | 'gone'>, string> = { available: 'available', provisioned: 'provisioned', deprovisioned: 'available' };

export class Fleet {
  readonly records = new Map<string, HostRecord>();
  private look?: Look;
  private nextLook: () => Promise<void> = () => Promise.reject(new Error('the fleet is not running'));
  private done = 0;
  private doneDirect = 0;

  constructor(
    private readonly hosts: ChaosHost[],
    private readonly drivers: Partial<Record<HostMode, ModeDriver>>,
    private readonly temporal: Client,
    /** Workflow id prefix shared by the run's namespaces (`host/chaos-<run>-`). */
    private readonly workflowPrefix: string,
    private readonly opts: { stepTimeoutMs: number; tickMs: number; log: (line: string) => void },
  ) {
    for (const h of hosts) this.records.set(h.key, { key: h.key, mode: h.mode, kind: h.kind, steps: {}, outcome: 'running' });
  }

  /** Steps done over steps in all (a stuck or lost host counts its missing steps as done: it will make no more). */
  get progress(): number {
    return this.done / (this.hosts.length * STEPS.length);
  }

  /** The same over the direct hosts alone: theirs is a quicker lifecycle, so the BMC fault is placed on it. */
  get directProgress(): number {
    const direct = this.hosts.filter((h) => h.kind === 'direct').length;
    return direct === 0 ? 1 : this.doneDirect / (direct * STEPS.length);
  }

  private count(h: ChaosHost, steps: number): void {
    this.done += steps;
    if (h.kind === 'direct') this.doneDirect += steps;
  }

  /** Each host's provisioning state as the last look listed it. */
  listedStates(): Map<string, string> {
    return new Map([...(this.look?.seen ?? new Map<string, Seen>())].map(([key, seen]) => [key, seen.state]));
  }

  /** The BMC indexes of direct hosts with a step asked for and not reached yet. */
  busyBmcs(): number[] {
    return this.hosts
      .filter((h) => h.kind === 'direct' && this.records.get(h.key)!.outcome === 'running')
      .filter((h) => Object.values(this.records.get(h.key)!.steps).some((s) => s.reachedAt === undefined))
      .map((h) => h.bmc!);
  }

  async run(): Promise<void> {
    // Temporal or the API away (a fault): that tick has no look; hosts wait for the next.
    const ticker = new Ticker(() => this.lookOnce(), this.opts.tickMs);
    this.nextLook = () => ticker.next();
    ticker.start();
    await Promise.all(this.hosts.map((h) => this.lifecycle(h)));
    await ticker.stop();
  }

  private async lookOnce(): Promise<void> {
    const at = Date.now();
    const busy = await hostsWithRunningOperation(this.temporal, this.workflowPrefix);
    const seen = new Map<string, Seen>();
    for (const d of Object.values(this.drivers)) {
      const ns = this.hosts.find((h) => h.mode === d.mode)?.namespace;
      for (const [name, s] of await d.list()) seen.set(`${ns}/${name}`, s);
    }
    this.look = { at, busy, seen };
  }

  private async lifecycle(h: ChaosHost): Promise<void> {
    const rec = this.records.get(h.key)!;
    const driver = this.drivers[h.mode]!;
    const actions: Record<Step, () => Promise<void>> = {
      available: () => driver.create(h),
      provisioned: () => driver.setImage(h),
      rebooted: () => driver.reboot(h),
      deprovisioned: () => driver.clearImage(h),
      gone: () => driver.remove(h),
    };
    for (const [i, step] of STEPS.entries()) {
      const requestedAt = Date.now();
      rec.steps[step] = { requestedAt };
      let result: 'reached' | 'timeout' | 'lost';
      try {
        await actions[step]();
        // Only looks begun after the change was taken count: one begun before it (the reboot annotation not yet there) would pass at once.
        result = await this.until(h, step, requestedAt, Date.now(), driver);
      } catch (err) {
        rec.outcome = 'stuck';
        rec.detail = `${step}: the change was not taken: ${err instanceof Error ? err.message : String(err)}`;
        this.count(h, STEPS.length - i);
        return;
      }
      if (result !== 'reached') {
        rec.outcome = result === 'lost' ? 'lost' : 'stuck';
        const where = await driver.describe(h).catch((err: unknown) => String(err));
        rec.detail = result === 'lost' ? `${step}: the host vanished before its delete (${where})` : `${step}: not reached in ${this.opts.stepTimeoutMs / 1000} s: ${where}`;
        this.opts.log(`host ${h.key} ${rec.outcome}: ${rec.detail}`);
        this.count(h, STEPS.length - i);
        return;
      }
      rec.steps[step]!.reachedAt = Date.now();
      this.count(h, 1);
    }
    rec.outcome = 'done';
  }

  private async until(h: ChaosHost, step: Step, requestedAt: number, takenAt: number, driver: ModeDriver): Promise<'reached' | 'timeout' | 'lost'> {
    const deadline = requestedAt + this.opts.stepTimeoutMs;
    let confirmations = 0;
    let absent = 0;
    for (;;) {
      await this.nextLook();
      const look = this.look;
      if (Date.now() > deadline) return 'timeout';
      if (!look || look.at < takenAt) continue;
      const seen = look.seen.get(h.key);
      if (step !== 'gone') {
        // Absent from three looks in a row, before its delete was asked: gone without being deleted.
        absent = seen ? 0 : absent + 1;
        if (absent >= 3) return 'lost';
      }
      const idle = seen !== undefined && !look.busy.has(h.key) && !seen.ended;
      let there: boolean;
      if (step === 'gone') there = seen === undefined;
      else if (step === 'rebooted') there = idle && (await driver.rebootDone(h, seen).catch(() => false));
      else there = idle && seen.state === TARGET[step];
      confirmations = there ? confirmations + 1 : 0;
      if (confirmations >= 2) return 'reached';
    }
  }
}
