/**
 * A bounded work queue that coalesces repeated events per host: a key is
 * queued at most once, and a key being processed that changes again is
 * processed once more afterwards (never twice at the same time). Failed keys
 * come back after a per-key backoff.
 *
 * A key refused because the queue is full (a timer's re-add included) is not
 * remembered one by one, which would unbound the queue: the queue notes that it
 * dropped something and then passes over every key `keys` lists (the
 * informer's cache, the truth), feeding them in as it drains and never past
 * half full, so events keep room and a pass ends. `resyncMs` starts a pass every
 * so often besides, for whatever a missed watch event or a lost timer left.
 */
export interface WorkQueueOptions {
  /** Keys waiting at most; beyond it `add` reports false and the keys are resynced once the queue has drained. */
  maxQueued: number;
  concurrency: number;
  baseBackoffMs: number;
  maxBackoffMs: number;
  /** Every key that should be reconciled (the informer's cache): read to recover from an overflow and to resync. */
  keys?: () => Iterable<string>;
  /** Queue every key this often (0 or unset: only after an overflow). */
  resyncMs?: number;
  log?: (message: string) => void;
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
  /** Keys were refused since the current pass started (or, with none, since the last). */
  private dropped = false;
  /** The pass over `keys` under way: its next keys go in as the queue drains. */
  private pass?: Iterator<string>;
  private resyncTimer?: NodeJS.Timeout;
  /** Keys refused for want of room, over the queue's life. */
  droppedTotal = 0;
  /** Passes over every key (periodic or after an overflow). */
  resyncs = 0;

  constructor(
    private readonly handler: (key: string) => Promise<void>,
    private readonly opts: WorkQueueOptions,
  ) {
    const period = opts.resyncMs ?? 0;
    if (period > 0 && opts.keys) {
      this.resyncTimer = setInterval(() => this.startPass(), period);
      this.resyncTimer.unref();
    }
  }

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
    if (this.queued.size >= this.opts.maxQueued) {
      if (!this.dropped) this.opts.log?.(`work queue full (${this.opts.maxQueued} keys): refused keys come back with a pass over every key`);
      this.dropped = true;
      this.droppedTotal += 1;
      return false;
    }
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
          if (this.dropped && !this.pass) this.startPass();
          this.feed();
          this.pump();
          if (this.running === 0 && this.order.length === 0) {
            for (const w of this.idleWaiters.splice(0)) w();
          }
        });
    }
  }

  /** Starts a pass over every key, unless one is under way (a periodic one then waits for the next period). */
  private startPass(): void {
    if (this.stopped || !this.opts.keys || this.pass) return;
    this.dropped = false;
    this.resyncs += 1;
    this.pass = this.opts.keys()[Symbol.iterator]();
    this.feed();
  }

  /** The pass's next keys, up to half the queue: keys from events keep the other half. */
  private feed(): void {
    const room = Math.max(1, Math.floor(this.opts.maxQueued / 2));
    while (this.pass && !this.stopped && this.queued.size < room) {
      const next = this.pass.next();
      if (next.done) {
        this.pass = undefined;
        // Refused while this pass ran: they may have been passed already, so another pass.
        if (this.dropped) this.startPass();
        return;
      }
      this.add(next.value);
    }
  }

  /** Resolves when nothing is queued or running (timers for retries may still be pending). */
  idle(): Promise<void> {
    if (this.running === 0 && this.order.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.resyncTimer);
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }
}
