/** The node watcher's choice between one list of every node, a list per transitional state, and a GET per watched node (clients/ironic/node-watcher.ts). */
import { describe, expect, it } from 'vitest';
import { planRead, readsByList } from '../../clients/ironic/node-watcher';

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
