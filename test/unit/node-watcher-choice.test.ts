/** The node watcher's choice between one list of every node and a GET per watched node (clients/ironic/node-watcher.ts). */
import { describe, expect, it } from 'vitest';
import { readsByList } from '../../clients/ironic/node-watcher';

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
