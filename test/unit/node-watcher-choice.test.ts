/**
 * The node watcher's choice between one list of every node, a list per transitional state, and a GET per watched
 * node, and when it first reads a node that entered a state (clients/ironic/node-watcher.ts).
 */
import { describe, expect, it } from 'vitest';
import { bracketedTime, DEFAULT_WATCH, firstReadAfter, planRead, readsByList, timedState } from '../../clients/ironic/node-watcher';

const opts = { listThreshold: 6, nodesPerGet: 20 };

describe('readsByList', () => {
  it('reads fewer than listThreshold nodes one by one, however few nodes Ironic has', () => {
    expect(readsByList(5, 5, opts)).toBe(false);
    expect(readsByList(5, undefined, opts)).toBe(false);
  });
  it('lists while the nodes were never counted (a fleet starting)', () => {
    expect(readsByList(6, undefined, opts)).toBe(true);
  });
  it('lists once the watched nodes times nodesPerGet reach the nodes Ironic has, GETs below', () => {
    expect(readsByList(6, 120, opts)).toBe(true);
    expect(readsByList(6, 121, opts)).toBe(false);
    expect(readsByList(50, 1000, opts)).toBe(true);
    expect(readsByList(49, 1000, opts)).toBe(false);
  });
});

describe('planRead', () => {
  const plan = { ...opts, stateListMin: 2 };
  const w = (id: string, state: string) => ({ id, state });
  it('lists the nodes of a transitional state once two or more wait in it, and GETs the rest', () => {
    const read = planRead([w('a', 'deploying'), w('b', 'deploying'), w('c', 'clean wait'), w('d', 'active'), w('e', 'clean wait')], 1000, plan);
    expect(read.all).toBe(false);
    expect([...read.byState]).toEqual([['deploying', ['a', 'b']], ['clean wait', ['c', 'e']]]);
    expect(read.single).toEqual(['d']);
  });
  it('never lists by a state nodes rest in: a wait on a power change in active reads its node alone', () => {
    const read = planRead([w('a', 'active'), w('b', 'active'), w('c', 'available'), w('d', 'available')], 1000, plan);
    expect(read.byState.size).toBe(0);
    expect(read.single).toEqual(['a', 'b', 'c', 'd']);
  });
  it('reads a lone node in a transitional state with its GET', () => {
    expect(planRead([w('a', 'deploying'), w('b', 'cleaning')], 1000, plan)).toEqual({ all: false, byState: new Map(), single: ['a', 'b'] });
  });
  it('keeps the one list of every node where that is the cheaper read', () => {
    expect(planRead([w('a', 'deploying'), w('b', 'deploying'), w('c', 'x'), w('d', 'x'), w('e', 'x'), w('f', 'x')], 100, plan).all).toBe(true);
  });
});

describe('the first read of a node that entered a state', () => {
  it('learns only the states Ironic works in: transitional provision states and pending power changes', () => {
    expect(timedState({ provision_state: 'deploying', target_power_state: null })).toBe('deploying');
    expect(timedState({ provision_state: 'active', target_power_state: 'power off' })).toBe('power → power off');
    // A resting state ends when someone sends a verb, not after a time of its own.
    expect(timedState({ provision_state: 'manageable', target_power_state: null })).toBeUndefined();
  });
  it('comes at once until three times were seen, then after three quarters of their median, within its bounds', () => {
    expect(firstReadAfter(undefined, DEFAULT_WATCH)).toBeUndefined();
    expect(firstReadAfter([4_000, 4_000], DEFAULT_WATCH)).toBeUndefined();
    expect(firstReadAfter([4_000, 2_000, 60_000], DEFAULT_WATCH)).toBe(3_000);
    expect(firstReadAfter([100, 120, 90], DEFAULT_WATCH)).toBe(DEFAULT_WATCH.intervalMs);
    // Minutes-long waits (an agent deploy): a change earlier than usual is never seen more than firstReadMaxMs late.
    expect(firstReadAfter([600_000, 600_000, 600_000], DEFAULT_WATCH)).toBe(DEFAULT_WATCH.firstReadMaxMs);
  });
  it('times a state by the middle of the reads that bracket its end, so a late first read shrinks what it learns', () => {
    // Entered at 1000, still there at 3000, gone at 3500: about 2250 ms.
    expect(bracketedTime(1_000, 3_000, 3_500)).toBe(2_250);
    // Gone at the first read, 3 s after it was entered: it took less; half is recorded, and the next first read is earlier.
    expect(bracketedTime(1_000, 1_000, 4_000)).toBe(1_500);
    const learned = [4_000, 4_000, 4_000];
    const first = firstReadAfter(learned, DEFAULT_WATCH)!;
    expect(bracketedTime(0, 0, first)).toBeLessThan(first);
  });
});
