import { describe, expect, it } from 'vitest';
import { NOTHING_SEEN, ownerOf, powerChanges, type SentinelNode } from '../../activities/power/sentinel-changes';

const node = (uuid: string, over: Partial<SentinelNode> = {}): SentinelNode => ({
  uuid,
  power_state: 'power on',
  target_power_state: null,
  provision_state: 'active',
  extra: { metalflow_host: `ns/${uuid}` },
  ...over,
});
const list = (...nodes: SentinelNode[]) => new Map(nodes.map((n) => [n.uuid, n]));
/** The changes of each list after the first, the sentinel's memory carried from list to list. */
const decide = (...lists: Map<string, SentinelNode>[]) => {
  let seen = NOTHING_SEEN;
  return lists.map((l) => {
    const d = powerChanges(seen, l);
    seen = d.seen;
    return d.changes;
  }).slice(1);
};

describe('the power sentinel decides from each list against what it saw', () => {
  it('signals a steady node whose power changed, and a steady node that vanished', () => {
    const before = list(node('a'), node('b'), node('c', { provision_state: 'available', power_state: 'power off' }));
    const now = list(node('a', { power_state: 'power off' }), node('c', { provision_state: 'available', power_state: 'power off' }));
    expect(decide(before, now)).toEqual([[
      { ref: { namespace: 'ns', name: 'b' }, nodeId: 'b', from: 'power on' },
      { ref: { namespace: 'ns', name: 'a' }, nodeId: 'a', from: 'power on', to: 'power off' },
    ]]);
  });

  it('signals a node that vanished while it was moving: its host may have come to rest since', () => {
    const before = list(node('deploying', { provision_state: 'deploying' }), node('cleaning', { provision_state: 'clean wait', target_power_state: 'power off' }));
    expect(decide(before, list())).toEqual([[
      { ref: { namespace: 'ns', name: 'deploying' }, nodeId: 'deploying', from: 'power on' },
      { ref: { namespace: 'ns', name: 'cleaning' }, nodeId: 'cleaning', from: 'power on' },
    ]]);
  });

  it('finds a change a list saw half-way (target_power_state set) by the last steady sight', () => {
    // Ironic slow to apply a power off: one list sees it under way, the next one done.
    const changes = decide(list(node('a')), list(node('a', { target_power_state: 'power off' })), list(node('a', { power_state: 'power off' })));
    expect(changes).toEqual([[], [{ ref: { namespace: 'ns', name: 'a' }, nodeId: 'a', from: 'power on', to: 'power off' }]]);
    // Once signalled, the new state is the baseline: nothing more while it stays.
    expect(decide(list(node('a')), list(node('a', { power_state: 'power off' })), list(node('a', { power_state: 'power off' })))[1]).toEqual([]);
  });

  it('leaves alone nodes in an operation, changing power on request, not metalflow’s, or new', () => {
    const before = list(
      node('deploying', { provision_state: 'wait call-back' }),
      node('moved', { provision_state: 'available' }),
      node('targeted'),
      node('foreign', { extra: {} }),
    );
    const now = list(
      node('deploying', { provision_state: 'active', power_state: 'power off' }),
      node('moved', { provision_state: 'active', power_state: 'power off' }),
      node('targeted', { power_state: 'power off', target_power_state: 'power on' }),
      node('foreign', { extra: {}, power_state: 'power off' }),
      node('new', { power_state: 'power off' }),
    );
    expect(decide(before, now)).toEqual([[]]);
    expect(decide(list(node('same')), list(node('same')))).toEqual([[]]);
    // Through an operation and back to the same resting state: compared with its sight before, a change.
    expect(decide(list(node('op', { provision_state: 'available' })), list(node('op', { provision_state: 'cleaning' })), list(node('op', { provision_state: 'available', power_state: 'power off' })))).toEqual([[], [{ ref: { namespace: 'ns', name: 'op' }, nodeId: 'op', from: 'power on', to: 'power off' }]]);
  });

  it('reads the owner from the mark metalflow writes, and nothing else', () => {
    expect(ownerOf({ extra: { metalflow_host: 'metal3/worker-0' } })).toEqual({ namespace: 'metal3', name: 'worker-0' });
    for (const extra of [{}, { metalflow_host: 'no-slash' }, { metalflow_host: '/x' }, { metalflow_host: 'x/' }, { metalflow_host: 7 }]) expect(ownerOf({ extra })).toBeUndefined();
  });
});
