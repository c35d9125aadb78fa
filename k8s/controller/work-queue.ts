/**
 * A bounded work queue that coalesces repeated events per host: a key is
 * queued at most once, and a key being processed that changes again is
 * processed once more afterwards (never twice at the same time). Failed keys
 * come back after a per-key backoff.
 */
export interface WorkQueueOptions {
  /** Keys waiting at most; beyond it `add` reports false and the next re-list picks them up. */
  maxQueued: number;
  concurrency: number;
  baseBackoffMs: number;
  maxBackoffMs: number;
}

export class WorkQueue {
  private readonly queued = new Set<string>();
  private readonly order: string[] = [];
  private readonly active = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private running = 0;
  private stopped = false;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly handler: (key: string) => Promise<void>,
    private readonly opts: WorkQueueOptions,
  ) {}

  get size(): number {
    return this.queued.size;
  }

  /** Queues a key; repeated adds before it runs collapse into one. */
  add(key: string): boolean {
    if (this.stopped) return false;
    if (this.active.has(key)) {
      this.dirty.add(key);
      return true;
    }
    if (this.queued.has(key)) return true;
    if (this.queued.size >= this.opts.maxQueued) return false;
    this.queued.add(key);
    this.order.push(key);
    this.pump();
    return true;
  }

  /** Queues a key again after `ms` (e.g. to check on a host that is being deleted). */
  addAfter(key: string, ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timers.get(key));
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        this.add(key);
      }, ms),
    );
  }

  private addAfterBackoff(key: string): void {
    const n = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, n);
    this.addAfter(key, Math.min(this.opts.baseBackoffMs * 2 ** (n - 1), this.opts.maxBackoffMs));
  }

  private pump(): void {
    while (!this.stopped && this.running < this.opts.concurrency && this.order.length > 0) {
      const key = this.order.shift()!;
      this.queued.delete(key);
      this.active.add(key);
      this.running += 1;
      void this.handler(key)
        .then(
          () => this.failures.delete(key),
          () => this.addAfterBackoff(key),
        )
        .finally(() => {
          this.active.delete(key);
          this.running -= 1;
          if (this.dirty.delete(key)) this.add(key);
          this.pump();
          if (this.running === 0 && this.order.length === 0) {
            for (const w of this.idleWaiters.splice(0)) w();
          }
        });
    }
  }

  /** Resolves when nothing is queued or running (timers for retries may still be pending). */
  idle(): Promise<void> {
    if (this.running === 0 && this.order.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }
}
