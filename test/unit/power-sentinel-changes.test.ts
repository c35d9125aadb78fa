import { describe, expect, it } from 'vitest';
import { ownerOf, powerChanges, type SentinelNode } from '../../activities/power-sentinel-changes';

const node = (uuid: string, over: Partial<SentinelNode> = {}): SentinelNode => ({
  uuid,
  power_state: 'power on',
  target_power_state: null,
  provision_state: 'active',
  extra: { metalflow_host: `ns/${uuid}` },
  ...over,
});
const list = (...nodes: SentinelNode[]) => new Map(nodes.map((n) => [n.uuid, n]));

describe('the power sentinel decides from two lists', () => {
  it('signals a steady node whose power changed, and a steady node that vanished', () => {
    const before = list(node('a'), node('b'), node('c', { provision_state: 'available', power_state: 'power off' }));
    const now = list(node('a', { power_state: 'power off' }), node('c', { provision_state: 'available', power_state: 'power off' }));
    expect(powerChanges(before, now)).toEqual([
      { ref: { namespace: 'ns', name: 'a' }, nodeId: 'a', from: 'power on', to: 'power off' },
      { ref: { namespace: 'ns', name: 'b' }, nodeId: 'b', from: 'power on' },
    ]);
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
    expect(powerChanges(before, now)).toEqual([]);
    expect(powerChanges(list(node('same')), list(node('same')))).toEqual([]);
  });

  it('reads the owner from the mark metalflow writes, and nothing else', () => {
    expect(ownerOf({ extra: { metalflow_host: 'metal3/worker-0' } })).toEqual({ namespace: 'metal3', name: 'worker-0' });
    for (const extra of [{}, { metalflow_host: 'no-slash' }, { metalflow_host: '/x' }, { metalflow_host: 'x/' }, { metalflow_host: 7 }]) expect(ownerOf({ extra })).toBeUndefined();
  });
});
