/**
 * Pages of a fleet's progress (contracts/fleet-progress-page.ts): a 10,000-host progress is
 * past what Temporal takes in one history payload, its first page is not, and pages cut the
 * hosts by offset, limit and outcome.
 */
import { describe, expect, it } from 'vitest';
import { boundedProgress, PAGE_FAILURES, progressPage, progressTooLarge, PROGRESS_LIMIT_BYTES } from '../../contracts/fleet-progress-page';
import type { FleetHost, FleetProgress } from '../../contracts/fleet';

/** A progress of n hosts of rack-sized names, every seventh failed, the rest succeeded. */
function progressOf(n: number): FleetProgress {
  const hosts: FleetHost[] = Array.from({ length: n }, (_, i) => ({
    ref: { namespace: 'site-paris-3-rack-a17', name: `server-${String(i).padStart(5, '0')}-r740xd-rack-a17` },
    outcome: i % 7 === 0 ? 'failed' : 'succeeded',
    startedAt: '2026-11-24T08:00:00.000Z',
    endedAt: '2026-11-24T08:20:00.000Z',
    changeSent: true,
    ...(i % 7 === 0 ? { error: 'provisioning failed: deploy failed: the agent did not answer within 600 s' } : {}),
  }));
  const failed = hosts.filter((h) => h.outcome === 'failed');
  return {
    name: 'big',
    input: { name: 'big', operation: { kind: 'reboot' }, selector: { namespace: 'site-paris-3-rack-a17' } },
    phase: 'completed',
    counts: { pending: 0, inFlight: 0, succeeded: n - failed.length, failed: failed.length, skipped: 0, cancelled: 0, notStarted: 0 },
    selected: n,
    limits: { maxConcurrent: 100, maxFailures: n },
    selection: { at: '2026-11-24T08:00:00.000Z', hosts: hosts.map((h) => ({ ref: h.ref, provisioningState: 'provisioned', bmcType: 'redfish' })), missing: [] },
    hosts,
    failures: failed.map((h) => ({ ref: h.ref, error: h.error! })),
    runs: 3,
  } as FleetProgress;
}

describe('fleet progress pages', () => {
  it('answers a 10,000-host progress (past 2 MB) with a first page under 1 MB, and a small one whole', () => {
    const big = progressOf(10_000);
    // Temporal's dev server refuses a payload over 2 MB (checked: 2.5 MB refused, 1.5 MB accepted).
    expect(JSON.stringify(big).length).toBeGreaterThan(2_000_000);
    const bounded = boundedProgress(big);
    expect(JSON.stringify(bounded).length).toBeLessThan(PROGRESS_LIMIT_BYTES);
    expect(bounded.hosts).toHaveLength(1000);
    expect(bounded.page).toMatchObject({ offset: 0, limit: 1000, total: 10_000 });
    expect(bounded.page?.reason).toMatch(/ask for pages/);
    expect(bounded.selection?.hosts).toEqual([]);
    expect(bounded.failures).toHaveLength(PAGE_FAILURES);
    expect(bounded.failures.at(-1)).toEqual(big.failures.at(-1));
    expect(bounded.counts).toEqual(big.counts);

    const small = progressOf(50);
    expect(progressTooLarge(small)).toBe(false);
    expect(boundedProgress(small)).toBe(small);
  });

  it('cuts by offset, limit and outcome, and clamps what is out of range', () => {
    const p = progressOf(100);
    const failed = progressPage(p, { outcome: 'failed', offset: 10, limit: 3 });
    expect(failed.page).toEqual({ offset: 10, limit: 3, total: 15, outcome: 'failed' });
    expect(failed.hosts.map((h) => h.ref.name)).toEqual(p.hosts.filter((h) => h.outcome === 'failed').slice(10, 13).map((h) => h.ref.name));
    expect(progressPage(p, { offset: 500 }).hosts).toEqual([]);
    expect(progressPage(p, { limit: 0 }).page?.limit).toBe(1);
    expect(progressPage(p, { limit: 10 ** 9 }).page?.limit).toBe(5000);
    expect(progressPage(p, { offset: -4, limit: 2.5 }).page).toMatchObject({ offset: 0, limit: 1000 });
  });
});
