/**
 * One look at the fleet every `intervalMs`, shared by everything that waits on
 * it: a waiter asks for the next look and wakes once it has happened (failed
 * or not: a failed look, e.g. with Temporal away, leaves the last one as it was).
 */
import { sleep } from './common';

export class Ticker {
  private waiters: (() => void)[] = [];
  private stopped = false;
  private paused = false;
  private looking?: Promise<void>;
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
        if (this.paused) {
          await sleep(this.intervalMs);
          continue;
        }
        this.looking = this.look().catch((err: unknown) => {
          this.lastError = String(err);
        });
        await this.looking;
        this.looking = undefined;
        const waiters = this.waiters;
        this.waiters = [];
        for (const w of waiters) w();
        await sleep(this.intervalMs);
      }
    })();
  }

  /**
   * No looks until resume() (the benchmark's idle windows: a look is a visibility list, which
   * would be counted as the fleet's cost at rest); resolves once a look in progress has ended.
   * Waiters meanwhile wait for the first look after resume().
   */
  async pause(): Promise<void> {
    this.paused = true;
    await this.looking;
  }

  resume(): void {
    this.paused = false;
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
