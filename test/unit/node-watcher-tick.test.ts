/**
 * How long the node watcher pauses between two reads, and when a failed read releases its waiters
 * (clients/ironic/node-watcher.ts nextTick, releaseAfter).
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_WATCH, nextTick, releaseAfter } from '../../clients/ironic/node-watcher';

const opts = { intervalMs: 250, tickLimit: 8 };

describe('nextTick', () => {
  it('reads again after intervalMs when Ironic answers quickly', () => {
    expect(nextTick(0, false, opts)).toBe(250);
    expect(nextTick(100, false, opts)).toBe(250);
  });
  it('backs off to twice a slow read', () => {
    expect(nextTick(400, false, opts)).toBe(800);
    expect(nextTick(1_000, false, opts)).toBe(2_000);
  });
  it('never pauses longer than tickLimit intervals, however long a read waited in Ironic\'s queue', () => {
    // 100 Redfish hosts: lists waited 20-70 s in Ironic's queue, and the old rule paused 40-140 s more.
    expect(nextTick(35_000, false, opts)).toBe(2_000);
    expect(nextTick(70_000, false, { intervalMs: 100, tickLimit: 8 })).toBe(800);
  });
  it('pauses the longest after a failed read, however quick the failure', () => {
    expect(nextTick(5, true, opts)).toBe(2_000);
    expect(nextTick(30_000, true, opts)).toBe(2_000);
  });
  it('reads at intervalMs when tickLimit is below one interval', () => {
    expect(nextTick(10_000, false, { intervalMs: 250, tickLimit: 0 })).toBe(250);
  });
  it('defaults to a limit of a few seconds', () => {
    expect(DEFAULT_WATCH.tickLimit * DEFAULT_WATCH.intervalMs).toBe(2_000);
  });
});

describe('releaseAfter', () => {
  it('keeps the waiters across a failed read, and releases them once reads failed failuresBeforeRelease times in a row', () => {
    expect(releaseAfter(1, DEFAULT_WATCH)).toBe(false);
    expect(releaseAfter(DEFAULT_WATCH.failuresBeforeRelease - 1, DEFAULT_WATCH)).toBe(false);
    expect(releaseAfter(DEFAULT_WATCH.failuresBeforeRelease, DEFAULT_WATCH)).toBe(true);
    expect(releaseAfter(DEFAULT_WATCH.failuresBeforeRelease + 5, DEFAULT_WATCH)).toBe(true);
  });
  it('releases at the first failure when configured so (the old behaviour), never at none', () => {
    expect(releaseAfter(1, { failuresBeforeRelease: 1 })).toBe(true);
    expect(releaseAfter(0, { failuresBeforeRelease: 0 })).toBe(false);
    expect(releaseAfter(1, { failuresBeforeRelease: 0 })).toBe(true);
  });
});
