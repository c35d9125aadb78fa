/**
 * Hosts this API process sent a delete to, checked until they are gone so their
 * secrets can be removed. One timer for all of them and one short call per
 * check, on a backoff per host: a delete held by a pause or a detach may wait
 * for weeks, and a long poll per delete held a gRPC call open for all that time.
 */
import type { HostRef } from '../model/host';
import { hostWorkflowId } from '../model/host-ref';

interface Pending {
  ref: HostRef;
  due: number;
  intervalMs: number;
}

export class DeletedHostSweep {
  private readonly pending = new Map<string, Pending>();
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private closed = false;

  /** `check` answers true once the host is gone (and its secrets handled): it is then forgotten. */
  constructor(
    private readonly check: (ref: HostRef) => Promise<boolean>,
    private readonly backoff = { firstMs: 1_000, maxMs: 300_000 },
  ) {}

  get size(): number {
    return this.pending.size;
  }

  add(ref: HostRef): void {
    if (this.closed) return;
    this.pending.set(hostWorkflowId(ref), { ref, due: Date.now() + this.backoff.firstMs, intervalMs: this.backoff.firstMs });
    this.schedule();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending.clear();
  }

  private schedule(): void {
    if (this.closed || this.running || this.pending.size === 0) return;
    const next = Math.min(...[...this.pending.values()].map((p) => p.due));
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.sweep(), Math.max(0, next - Date.now()));
    // Never what keeps the process alive.
    this.timer.unref();
  }

  private async sweep(): Promise<void> {
    this.timer = undefined;
    this.running = true;
    try {
      for (const [key, p] of [...this.pending]) {
        if (this.closed) return;
        if (p.due > Date.now()) continue;
        const gone = await this.check(p.ref).catch(() => false);
        // A delete sent again meanwhile replaced the entry: that one's schedule stands.
        if (this.pending.get(key) !== p) continue;
        if (gone) this.pending.delete(key);
        else {
          p.intervalMs = Math.min(this.backoff.maxMs, p.intervalMs * 2);
          p.due = Date.now() + p.intervalMs;
        }
      }
    } finally {
      this.running = false;
      this.schedule();
    }
  }
}
