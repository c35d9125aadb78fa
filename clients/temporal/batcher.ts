/**
 * Coalesces concurrent requests per key into one call: while a call for a
 * key is in flight, new requests wait and then go together in the next one
 * (at most `max` per call). Used for a pool's allocations and releases: one
 * workflow takes one update per workflow task, so one update per claim made
 * a burst of claims wait in line for the server.
 */
interface Pending<Q, R> {
  request: Q;
  resolve(value: R): void;
  reject(err: unknown): void;
}

export class Batcher<Q, R> {
  private readonly queues = new Map<string, Pending<Q, R>[]>();
  private readonly busy = new Set<string>();

  constructor(
    private readonly send: (key: string, requests: Q[]) => Promise<R[]>,
    private readonly max = 200,
  ) {}

  submit(key: string, request: Q): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const queue = this.queues.get(key) ?? [];
      queue.push({ request, resolve, reject });
      this.queues.set(key, queue);
      void this.pump(key);
    });
  }

  private async pump(key: string): Promise<void> {
    if (this.busy.has(key)) return;
    const queue = this.queues.get(key);
    if (!queue || queue.length === 0) return;
    const batch = queue.splice(0, this.max);
    if (queue.length === 0) this.queues.delete(key);
    this.busy.add(key);
    try {
      const results = await this.send(key, batch.map((p) => p.request));
      batch.forEach((p, i) => p.resolve(results[i]!));
    } catch (err) {
      for (const p of batch) p.reject(err);
    } finally {
      this.busy.delete(key);
      void this.pump(key);
    }
  }
}
