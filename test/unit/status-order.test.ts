/**
 * The order of a host's status writes (model/status-order.ts), kept in `status.lastUpdated`: later for a later
 * workflow task, and within a task for a later write of the run; a `lastUpdated` in any other form (BMO's, to the
 * second) orders nothing. The stack test is test/k8s/status-writes.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { laterWriteHeld, parseStatusWriteOrder, statusWriteOrder } from '../../model/status-order';

const t = Date.parse('2026-12-04T03:54:35.123Z');

describe('status write order', () => {
  it('an RFC 3339 time to the nanosecond: the task time to the millisecond, then the write number', () => {
    expect(statusWriteOrder(t, 42)).toBe('2026-12-04T03:54:35.123000042Z');
    expect(statusWriteOrder(t, 0)).toBe('2026-12-04T03:54:35.123000000Z');
    expect(statusWriteOrder(t, 5_000_000)).toBe('2026-12-04T03:54:35.123999999Z');
    // Still the time it names, to the millisecond, for any reader of a date-time.
    expect(new Date(statusWriteOrder(t, 7)).getTime()).toBe(t);
    expect(parseStatusWriteOrder(statusWriteOrder(t, 7))).toEqual({ ms: t, write: 7 });
  });

  it('a later task, or a later write of the same task, is later; the same write is not', () => {
    expect(laterWriteHeld(statusWriteOrder(t + 1, 1), statusWriteOrder(t, 9))).toBe(true);
    expect(laterWriteHeld(statusWriteOrder(t, 3), statusWriteOrder(t, 2))).toBe(true);
    expect(laterWriteHeld(statusWriteOrder(t, 2), statusWriteOrder(t, 2))).toBe(false);
    expect(laterWriteHeld(statusWriteOrder(t, 2), statusWriteOrder(t, 3))).toBe(false);
    expect(laterWriteHeld(statusWriteOrder(t - 1, 999), statusWriteOrder(t, 1))).toBe(false);
  });

  it("a lastUpdated not in the order's form (BMO's, a restored status's, none) holds no later write", () => {
    for (const held of ['2026-12-04T05:00:00Z', '2026-12-04T05:00:00.123Z', '2030-01-01T00:00:00.123456Z', '', undefined, null, 17]) {
      expect(laterWriteHeld(held, statusWriteOrder(t, 1))).toBe(false);
    }
    expect(parseStatusWriteOrder('2026-13-45T99:99:99.123000001Z')).toBeUndefined();
  });
});
