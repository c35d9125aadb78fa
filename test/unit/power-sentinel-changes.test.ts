import { describe, expect, it } from 'vitest';
import { alreadyKnown, LOST_TELLS, NOTHING_SEEN, ownerOf, powerChanges, recordOf, relistSeconds, seenFrom, sightsOf, sweepCalledFor, sweepTells, type Seen, type SentinelNode } from '../../activities/power/sentinel-changes';

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
const decide = (...lists: Map<string, SentinelNode>[]) => decideFrom(NOTHING_SEEN, ...lists).changes.slice(1);
/** The changes of every list from `start`, and the memory after the last. */
function decideFrom(start: Seen, ...lists: Map<string, SentinelNode>[]) {
  let seen = start;
  const changes = lists.map((l) => {
    const d = powerChanges(seen, sightsOf(l.values()));
    seen = d.seen;
    return d.changes;
  });
  return { changes, seen };
}

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
      node('targeted'),
      node('foreign', { extra: {} }),
    );
    const now = list(
      node('deploying', { provision_state: 'active', power_state: 'power off' }),
      node('targeted', { power_state: 'power off', target_power_state: 'power on' }),
      node('foreign', { extra: {}, power_state: 'power off' }),
      node('new', { power_state: 'power off' }),
    );
    expect(decide(before, now)).toEqual([[]]);
    expect(decide(list(node('same')), list(node('same')))).toEqual([[]]);
    // Through an operation and back to the same resting state: compared with its sight before, a change.
    expect(decide(list(node('op', { provision_state: 'available' })), list(node('op', { provision_state: 'cleaning' })), list(node('op', { provision_state: 'available', power_state: 'power off' })))).toEqual([[], [{ ref: { namespace: 'ns', name: 'op' }, nodeId: 'op', from: 'power on', to: 'power off' }]]);
  });

  it('signals a node moved from one resting provision state to another (behind metalflow’s back, or an operation quicker than a list)', () => {
    const changes = decide(list(node('moved', { provision_state: 'available' })), list(node('moved', { provision_state: 'manageable' })), list(node('moved', { provision_state: 'manageable' })));
    expect(changes).toEqual([[{ ref: { namespace: 'ns', name: 'moved' }, nodeId: 'moved', from: 'power on', to: 'power on', provision: { from: 'available', to: 'manageable' } }], []]);
  });

  it('tells a host its node is gone at each list, a bounded number of times, until a node with its mark shows up', () => {
    const gone = { ref: { namespace: 'ns', name: 'a' }, nodeId: 'a' };
    const empty = Array.from({ length: LOST_TELLS + 1 }, () => list());
    expect(decide(list(node('a')), ...empty)).toEqual([[{ ...gone, from: 'power on' }], ...Array.from({ length: LOST_TELLS - 1 }, () => [{ ...gone, from: null }]), []]);
    // Registered again (a new node with its mark): told no more.
    const again = node('a2', { extra: { metalflow_host: 'ns/a' }, provision_state: 'manageable' });
    expect(decide(list(node('a')), list(), list(again), list(again))).toEqual([[{ ...gone, from: 'power on' }], [], []]);
  });

  it('keeps its memory across a restart through the heartbeat record: a node lost meanwhile is still told', () => {
    const { seen } = decideFrom(NOTHING_SEEN, list(node('a'), node('b', { provision_state: 'deploying', target_power_state: 'power off' }), node('x', { extra: {} })));
    const record = JSON.parse(JSON.stringify(recordOf(seen))) as unknown;
    const resumed = seenFrom({ lists: 3, seen: record });
    expect(resumed).toEqual(seen);
    // Unmarked nodes are not kept.
    expect(resumed.last.has('x')).toBe(false);
    expect(decideFrom(resumed, list()).changes).toEqual([[
      { ref: { namespace: 'ns', name: 'a' }, nodeId: 'a', from: 'power on' },
      { ref: { namespace: 'ns', name: 'b' }, nodeId: 'b', from: 'power on' },
    ]]);
    // What an attempt of an older build heartbeated, or nothing: a fresh start.
    for (const details of [undefined, { lists: 1 }, { seen: { nodes: 'x' } }]) expect(seenFrom(details)).toEqual(NOTHING_SEEN);
  });

  it('calls for a sweep when at least half of the nodes vanished at once; the sweep tells resting hosts with no marked node, once more at most', () => {
    const three = list(node('a'), node('b'), node('c'));
    expect(powerChanges(decideFrom(NOTHING_SEEN, three).seen, sightsOf(list(node('a'), node('b')).values())).massVanish).toBe(false);
    expect(powerChanges(decideFrom(NOTHING_SEEN, three).seen, sightsOf(list(node('a')).values())).massVanish).toBe(true);
    expect(powerChanges(NOTHING_SEEN, sightsOf(list().values())).massVanish).toBe(false);

    // Ironic lost its database: 'a' was listed, 'young' got its node after the last list.
    const before = decideFrom(NOTHING_SEEN, list(node('a'), node('d'))).seen;
    const empty = sightsOf(list(node('d')).values());
    const decided = powerChanges(before, empty);
    expect(decided.changes.map((c) => c.ref.name)).toEqual(['a']);
    const host = (name: string, detached = false) => ({ workflowId: `host/ns/${name}`, owner: `ns/${name}`, detached });
    const swept = sweepTells([host('a'), host('young'), host('d'), host('gone-detached', true)], empty, decided.seen);
    expect(swept.changes).toEqual([{ ref: { namespace: 'ns', name: 'young' }, nodeId: '', from: null, workflowId: 'host/ns/young' }]);
    const next = powerChanges(swept.seen, empty);
    expect(next.changes.map((c) => c.ref.name).sort()).toEqual(['a', 'young']);
    expect(powerChanges(next.seen, empty).changes.map((c) => c.ref.name)).toEqual(['a']);
  });

  it('calls for a sweep when visibility counts a resting host it does not know of: a node made after the last list and lost before the next, also after an empty list', () => {
    const host = (name: string, detached = false) => ({ workflowId: `host/ns/${name}`, owner: `ns/${name}`, detached });
    // A new fleet: the last list was empty, 'young' registered and lost its node before the next one. No vanish.
    const decided = powerChanges(decideFrom(NOTHING_SEEN, list()).seen, sightsOf(list().values()));
    expect(decided.changes).toEqual([]);
    expect(decided.massVanish).toBe(false);
    // Visibility counts one resting host, the sentinel knows of none: a sweep, which tells it.
    expect(sweepCalledFor(1, decided.seen)).toBe(true);
    const swept = sweepTells([host('young')], sightsOf(list().values()), decided.seen);
    expect(swept.changes.map((c) => c.ref.name)).toEqual(['young']);
    expect(sweepCalledFor(1, swept.seen)).toBe(false);
    // Told once more at the next list, then registered again: known by its new node, told no more.
    const next = powerChanges(swept.seen, sightsOf(list().values()));
    expect(next.changes.map((c) => c.ref.name)).toEqual(['young']);
    const back = powerChanges(next.seen, sightsOf(list(node('y2', { extra: { metalflow_host: 'ns/young' }, provision_state: 'manageable' })).values()));
    expect(back.changes).toEqual([]);
    expect(back.seen.lost.size).toBe(0);
    expect(sweepCalledFor(1, back.seen)).toBe(false);
    // Every resting host with a listed node: no sweep; one more than the list shows: a sweep.
    const three = decideFrom(NOTHING_SEEN, list(node('a'), node('b'), node('c'))).seen;
    expect(sweepCalledFor(3, three)).toBe(false);
    expect(sweepCalledFor(4, three)).toBe(true);
  });

  it('tells a resting host with no node at all (the direct provisioner\'s) twice, then keeps it known and untold while it has none', () => {
    const host = (name: string, detached = false) => ({ workflowId: `host/ns/${name}`, owner: `ns/${name}`, detached });
    const nodes = sightsOf(list(node('a')).values());
    let seen = powerChanges(NOTHING_SEEN, nodes).seen;
    expect(sweepCalledFor(2, seen)).toBe(true);
    const swept = sweepTells([host('a'), host('direct'), host('off', true)], nodes, seen);
    expect(swept.changes.map((c) => c.ref.name)).toEqual(['direct']);
    seen = swept.seen;
    const told: string[][] = [];
    for (let i = 0; i < 10; i++) {
      const d = powerChanges(seen, nodes);
      told.push(d.changes.map((c) => c.ref.name));
      seen = d.seen;
      expect(sweepCalledFor(2, seen)).toBe(false);
    }
    expect(told).toEqual([['direct'], ...Array.from({ length: 9 }, () => [])]);
    // Through the heartbeat record too (the same shape as before: an older build drops it, as it did).
    expect(seenFrom(JSON.parse(JSON.stringify({ seen: recordOf(seen) })))).toEqual(seen);
    // A later sweep does not tell it again; one that no longer lists it at rest (deleted, busy) forgets it.
    expect(sweepTells([host('a'), host('direct')], nodes, seen).changes).toEqual([]);
    expect(sweepTells([host('a')], nodes, seen).seen.lost.size).toBe(0);
    expect(sweepTells([host('a'), host('direct', true)], nodes, seen).seen.lost.size).toBe(0);
  });

  it('sweeps again for a host told its node vanished that is still without one once its tells are spent', () => {
    const host = (name: string) => ({ workflowId: `host/ns/${name}`, owner: `ns/${name}`, detached: false });
    const { seen } = decideFrom(NOTHING_SEEN, list(node('a'), node('b')), list(node('b')), list(node('b')), list(node('b')), list(node('b')));
    // Its vanish told LOST_TELLS times, then dropped as before: the count finds it unknown and the sweep tells it.
    expect(seen.lost.size).toBe(0);
    expect(sweepCalledFor(2, seen)).toBe(true);
    expect(sweepTells([host('a'), host('b')], seen.last, seen).changes.map((c) => c.ref.name)).toEqual(['a']);
  });

  it('lists again soon after a list that failed, backing off up to the interval', () => {
    expect(relistSeconds(0, 30)).toBe(30);
    expect([1, 2, 3, 10].map((n) => relistSeconds(n, 30))).toEqual([2, 3, 4, 11]);
    expect(relistSeconds(29, 30)).toBe(30);
    expect(relistSeconds(500, 30)).toBe(30);
    expect(relistSeconds(1, 1)).toBe(1);
  });

  it('marks a provision move that came with a verb of metalflow\'s (the sent marker changed), and keeps the marker across a restart', () => {
    const sent = (verb: string) => ({ metalflow_host: 'ns/n', metalflow_sent: { key: 'host/ns/n@run#7', verb, before: 'available@t' } });
    const own = decide(list(node('n', { provision_state: 'manageable', extra: sent('inspect') })), list(node('n', { provision_state: 'deploying', extra: sent('active') })), list(node('n', { extra: sent('active') })));
    expect(own).toEqual([[], [{ ref: { namespace: 'ns', name: 'n' }, nodeId: 'n', from: 'power on', to: 'power on', provision: { from: 'manageable', to: 'active' }, ownMove: true }]]);
    // The marker is written before its verb: a list that saw the node still at rest with it (available, marked for
    // the deploy sent from available) sees the same marker on the active node, sent from the state it left.
    const raced = decide(list(node('n', { provision_state: 'available', extra: sent('active') })), list(node('n', { extra: sent('active') })));
    expect(raced[0]?.[0]?.ownMove).toBe(true);
    // By hand (the marker as it was, sent from another state): no mark, the host is told as before.
    const byHand = decide(list(node('n', { provision_state: 'manageable', extra: sent('inspect') })), list(node('n', { provision_state: 'active', extra: sent('inspect') })));
    expect(byHand[0]?.[0]).toMatchObject({ provision: { from: 'manageable', to: 'active' } });
    expect(byHand[0]?.[0]?.ownMove).toBeUndefined();
    // The digest travels in the heartbeat record, for the current sight and the last steady one.
    const { seen } = decideFrom(NOTHING_SEEN, list(node('n', { provision_state: 'manageable', extra: sent('inspect') })), list(node('n', { provision_state: 'deploying', extra: sent('active') })));
    const resumed = seenFrom(JSON.parse(JSON.stringify({ seen: recordOf(seen) })));
    expect(resumed).toEqual(seen);
    expect(decideFrom(resumed, list(node('n', { extra: sent('active') }))).changes[0]?.[0]?.ownMove).toBe(true);
  });

  it('does not tell a host what its running record already shows', () => {
    const ref = { namespace: 'ns', name: 'n' };
    const on = { provisioningState: 'available', poweredOn: true };
    // Its own power change, recorded: not told; a change behind its back (recorded off, node on): told.
    expect(alreadyKnown({ ref, nodeId: 'n', from: 'power off', to: 'power on' }, on)).toBe(true);
    expect(alreadyKnown({ ref, nodeId: 'n', from: 'power off', to: 'power on' }, { ...on, poweredOn: false })).toBe(false);
    // A move of its own with the power it recorded: not told; a move by hand: told, whatever the power.
    expect(alreadyKnown({ ref, nodeId: 'n', from: 'power on', to: 'power on', provision: { from: 'manageable', to: 'active' }, ownMove: true }, { provisioningState: 'provisioned', poweredOn: true })).toBe(true);
    expect(alreadyKnown({ ref, nodeId: 'n', from: 'power on', to: 'power on', provision: { from: 'manageable', to: 'available' } }, on)).toBe(false);
    // A host that removes its node: its own power-off and its node vanishing are not told; a vanished node is, to a resting host.
    expect(alreadyKnown({ ref, nodeId: 'n', from: 'power on', to: 'power off' }, { provisioningState: 'powering off before delete', poweredOn: true })).toBe(true);
    expect(alreadyKnown({ ref, nodeId: 'n', from: 'power off' }, { provisioningState: 'deleting', poweredOn: false })).toBe(true);
    expect(alreadyKnown({ ref, nodeId: 'n', from: 'power on' }, on)).toBe(false);
    // No running record (closed, or visibility behind): told.
    expect(alreadyKnown({ ref, nodeId: 'n', from: 'power off', to: 'power on' }, undefined)).toBe(false);
  });

  it('reads the owner from the mark metalflow writes, and nothing else', () => {
    expect(ownerOf({ extra: { metalflow_host: 'metal3/worker-0' } })).toEqual({ namespace: 'metal3', name: 'worker-0' });
    for (const extra of [{}, { metalflow_host: 'no-slash' }, { metalflow_host: '/x' }, { metalflow_host: 'x/' }, { metalflow_host: 7 }]) expect(ownerOf({ extra })).toBeUndefined();
  });
});
