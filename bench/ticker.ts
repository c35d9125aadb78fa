/**
 * One look at the fleet every `intervalMs`, shared by everything that waits on
 * it: a waiter asks for the next look and wakes once it has happened (failed
 * or not: a failed look, e.g. with Temporal away, leaves the last one as it was).
 */
import { sleep } from './common';

export class Ticker {
  private waiters: (() => void)[] = [];
  private stopped = false;
  private loop?: Promise<void>;
  /** Why the last look that failed failed. */
  lastError?: string;

  constructor(
    private readonly look: () => Promise<void>,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    this.loop ??= (async () => {
      while (!this.stopped) {
        try {
          await this.look();
        } catch (err) {
          this.lastError = String(err);
        }
        const waiters = this.waiters;
        this.waiters = [];
        for (const w of waiters) w();
        await sleep(this.intervalMs);
      }
    })();
  }

  /** Resolves after the next look. */
  next(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}
