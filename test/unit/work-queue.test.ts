import { describe, expect, it } from 'vitest';
import { WorkQueue } from '../../k8s/controller/work-queue';

const opts = { maxQueued: 3, concurrency: 2, baseBackoffMs: 10, maxBackoffMs: 40 };

/** Awaits a condition (bounded), instead of sleeping and hoping. */
async function until(what: string, cond: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

describe('WorkQueue', () => {
  it('coalesces repeated adds of a waiting key into one run', async () => {
    const runs: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const q = new WorkQueue(async (k) => {
      runs.push(k);
      if (k === 'a') await gate;
    }, { ...opts, concurrency: 1 });
    q.add('a');
    for (let i = 0; i < 5; i++) q.add('b');
    release();
    await q.idle();
    expect(runs).toEqual(['a', 'b']);
  });

  it('runs a key that changed while running once more, never concurrently', async () => {
    let concurrent = 0;
    let maxConcurrent = 0;
    let runs = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const q = new WorkQueue(async () => {
      concurrent += 1;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      runs += 1;
      if (runs === 1) await gate;
      concurrent -= 1;
    }, opts);
    q.add('a');
    await until('the first run to start', () => runs === 1);
    q.add('a');
    q.add('a');
    release();
    await until('the second run', () => runs === 2);
    await q.idle();
    expect(runs).toBe(2);
    expect(maxConcurrent).toBe(1);
  });

  it('is bounded and retries failures with backoff', async () => {
    let attempts = 0;
    const q = new WorkQueue(async (k) => {
      if (k === 'flaky' && ++attempts < 3) throw new Error('not yet');
    }, { ...opts, concurrency: 1 });
    expect(q.add('flaky')).toBe(true);
    await until('the third attempt', () => attempts >= 3);
    await q.idle();
    expect(attempts).toBe(3);
    const blocked = new WorkQueue(() => new Promise(() => undefined), { ...opts, concurrency: 1 });
    blocked.add('running');
    expect(['x', 'y', 'z'].map((k) => blocked.add(k))).toEqual([true, true, true]);
    expect(blocked.add('overflow')).toBe(false);
    q.stop();
    blocked.stop();
  });

  it('recovers the keys it refused while full, timer re-adds included, from the key list once it drains', async () => {
    const all = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    const runs = new Map<string, number>();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const q = new WorkQueue(async (k) => {
      runs.set(k, (runs.get(k) ?? 0) + 1);
      await gate;
    }, { ...opts, concurrency: 1, keys: () => all });
    q.add('a');
    await until('the first run to start', () => runs.get('a') === 1);
    expect(['b', 'c', 'd', 'e', 'f'].map((k) => q.add(k))).toEqual([true, true, true, false, false]);
    q.addAfter('g', 1);
    await until('the timer to fire into a full queue', () => q.droppedTotal === 3);
    release();
    await until('every key to run', () => all.every((k) => (runs.get(k) ?? 0) >= 1));
    await q.idle();
    expect(q.resyncs).toBeGreaterThanOrEqual(1);
    q.stop();
  });

  it('queues every key again each resync period, with no event to bring them', async () => {
    const runs = new Map<string, number>();
    const q = new WorkQueue(async (k) => {
      runs.set(k, (runs.get(k) ?? 0) + 1);
    }, { ...opts, keys: () => ['x', 'y'], resyncMs: 5 });
    await until('two passes over both keys', () => (runs.get('x') ?? 0) >= 2 && (runs.get('y') ?? 0) >= 2);
    q.stop();
  });
});
