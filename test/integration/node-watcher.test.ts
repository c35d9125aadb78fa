/**
 * The shared node watcher against the real Ironic (fake-hardware): waiters
 * wake only for their own node's change, a vanished node, or their deadline;
 * many watched nodes cost one list request per tick instead of a GET each,
 * and nodes waiting in one transitional state one list of that state; a
 * failed read keeps the waiters until reads fail several times in a row.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import { NodeWatcher, type WaitOutcome } from '../../clients/ironic/node-watcher';
import type { IronicNode } from '../../clients/ironic/types';
import { IRONIC_URL } from '../support/env';
import { IronicProxy } from '../../bench/support/ironic-proxy';
import { uniq, waitFor } from '../support/harness';

const direct = new IronicClient({ url: IRONIC_URL });
const proxy = new IronicProxy(IRONIC_URL);
let client: IronicClient;
const created: string[] = [];

async function makeNodes(n: number): Promise<IronicNode[]> {
  const nodes: IronicNode[] = [];
  for (let i = 0; i < n; i++) {
    const node = await direct.createNode({ name: uniq('watch'), driver: 'fake-hardware' });
    created.push(node.uuid);
    nodes.push(node);
  }
  return nodes;
}

/** Tracks which waits have settled, so a test can assert that some have not. */
function track(p: Promise<WaitOutcome>): { outcome?: WaitOutcome; done: Promise<WaitOutcome> } {
  const t: { outcome?: WaitOutcome; done: Promise<WaitOutcome> } = { done: p };
  t.done = p.then((o) => (t.outcome = o));
  return t;
}

/** Resolves once the watcher has read Ironic `n` more times. */
async function ticks(watcher: NodeWatcher, n: number): Promise<void> {
  const from = watcher.reads;
  await waitFor(`${n} more reads of the watcher`, async () => watcher.reads >= from + n, { timeoutMs: 30_000, intervalMs: 20 });
}

beforeAll(async () => {
  await proxy.start();
  client = new IronicClient({ url: proxy.url });
});

afterAll(async () => {
  await proxy.stop();
  for (const id of created) await direct.deleteNode(id).catch(() => undefined);
});

describe('NodeWatcher on the real Ironic', () => {
  it('wakes only the waiter whose node changed, and reads many nodes with one list per tick', async () => {
    const nodes = await makeNodes(8);
    // nodesPerGet this high: a list however many nodes the shared Ironic holds.
    const watcher = new NodeWatcher(client, { intervalMs: 100, listThreshold: 4, nodesPerGet: 1e6 });
    proxy.requests.length = 0;
    const waits = nodes.map((n) => track(watcher.wait(n.uuid, n, 60_000)));

    // A few ticks with nothing changing: nobody wakes.
    await ticks(watcher, 5);
    expect(waits.every((w) => w.outcome === undefined)).toBe(true);

    await direct.patchNode(nodes[3]!.uuid, [{ op: 'add', path: '/maintenance', value: true }]);
    expect(await waits[3]!.done).toBe('changed');
    await ticks(watcher, 3);
    expect(waits.filter((w) => w.outcome !== undefined)).toHaveLength(1);

    await direct.deleteNode(nodes[5]!.uuid);
    expect(await waits[5]!.done).toBe('gone');

    const lists = proxy.count((r) => r.method === 'GET' && r.path.startsWith('/v1/nodes?'));
    const gets = proxy.count((r) => r.method === 'GET' && /^\/v1\/nodes\/[^/?]+/.test(r.path));
    expect(lists).toBeGreaterThan(2);
    expect(gets).toBe(0);
    expect(lists).toBe(watcher.reads);

    await direct.patchNode(nodes[0]!.uuid, [{ op: 'add', path: '/maintenance', value: true }]);
    expect(await waits[0]!.done).toBe('changed');

    // Closing releases the rest at once and stops reading.
    watcher.close();
    expect(await Promise.all(waits.filter((w) => w.outcome === undefined).map((w) => w.done))).toEqual(Array(5).fill('timeout'));
    expect(watcher.watching).toBe(0);
    const reads = watcher.reads;
    // A second watcher on the same tick counts the time: four of its reads, none of the closed one's.
    const clock = new NodeWatcher(client, { intervalMs: 100, listThreshold: 4, nodesPerGet: 1e6 });
    const kept = clock.wait(nodes[1]!.uuid, nodes[1]!, 60_000);
    await ticks(clock, 4);
    clock.close();
    await kept;
    expect(watcher.reads).toBe(reads);
  });

  it('reads a few watched nodes among many with a GET each, listing only to count the nodes again', async () => {
    const nodes = await makeNodes(6);
    const total = (await direct.listNodeStates(['uuid'])).length;
    // Six watched among `total`: a list costs Ironic more than six GETs once it counted more than 6 x nodesPerGet nodes.
    // The threshold sits below this file's own six nodes: other files add and remove nodes of the shared Ironic meanwhile.
    expect(total).toBeGreaterThanOrEqual(6);
    const watcher = new NodeWatcher(client, { intervalMs: 100, listThreshold: 4, nodesPerGet: 0.5, recountMs: 1500 });
    const lists = () => proxy.count((r) => r.method === 'GET' && r.path.startsWith('/v1/nodes?'));
    const gets = () => proxy.count((r) => r.method === 'GET' && /^\/v1\/nodes\/[^/?]+\?fields=/.test(r.path));
    proxy.requests.length = 0;
    const waits = nodes.map((n) => track(watcher.wait(n.uuid, n, 60_000)));
    // The first read lists (nothing counted yet), the next ones GET each node; after recountMs a list counts again.
    await waitFor('a second list (the recount)', async () => lists() >= 2, { timeoutMs: 30_000, intervalMs: 50 });
    const first = proxy.requests.filter((r) => r.method === 'GET').slice(0, 7).map((r) => r.path.split('?')[0]);
    expect(first).toEqual(['/v1/nodes', ...Array(6).fill(expect.stringMatching(/^\/v1\/nodes\/[^/]+$/))]);
    expect(new Set(first.slice(1))).toEqual(new Set(nodes.map((n) => `/v1/nodes/${n.uuid}`)));
    await direct.patchNode(nodes[2]!.uuid, [{ op: 'add', path: '/maintenance', value: true }]);
    expect(await waits[2]!.done).toBe('changed');
    expect(waits.filter((w) => w.outcome !== undefined)).toHaveLength(1);
    watcher.close();
    await Promise.all(waits.map((w) => w.done));
    expect(gets()).toBeGreaterThanOrEqual(6);
  });

  it('reads nodes waiting in one transitional state with one list of that state, and a node that left it on its own', async () => {
    // A direct-deploy node's automated clean waits for an agent that never comes: Ironic holds it in `clean wait`.
    const held: IronicNode[] = await Promise.all(
      [0, 1, 2].map(async () => {
        const node = await direct.createNode({ name: uniq('watch-cw'), driver: 'fake-hardware', deploy_interface: 'direct', automated_clean: true });
        created.push(node.uuid);
        await direct.setProvisionState(node.uuid, 'manage');
        await waitFor('manageable', async () => (await direct.getNode(node.uuid))?.provision_state === 'manageable', { timeoutMs: 20_000, intervalMs: 100 });
        await direct.setProvisionState(node.uuid, 'provide');
        return waitFor('clean wait', async () => {
          const n = await direct.getNode(node.uuid);
          return n?.provision_state === 'clean wait' && n;
        }, { timeoutMs: 20_000, intervalMs: 100 });
      }),
    );
    // nodesPerGet 0: never one list of every node.
    // No recount during the ticks looked at (a loaded machine's ticks can outlast the default).
    const watcher = new NodeWatcher(client, { intervalMs: 100, listThreshold: 2, nodesPerGet: 0, recountMs: 600_000 });
    try {
      proxy.requests.length = 0;
      const waits = held.map((n) => track(watcher.wait(n.uuid, n, 60_000)));
      await ticks(watcher, 4);
      expect(waits.every((w) => w.outcome === undefined)).toBe(true);
      // The first read lists every node to count them (readsByList); the next ones list the state's nodes, no GET.
      const reads = proxy.requests.filter((r) => r.method === 'GET' && r.path.startsWith('/v1/nodes')).map((r) => r.path.replace(/fields=[^&]*&/, ''));
      const gets = () => proxy.count((r) => r.method === 'GET' && /^\/v1\/nodes\/[^/?]+/.test(r.path));
      expect(reads[0]).toBe('/v1/nodes?limit=1000');
      expect(reads.length).toBeGreaterThanOrEqual(3);
      expect(new Set(reads.slice(1))).toEqual(new Set(['/v1/nodes?provision_state=clean%20wait&limit=1000']));
      // One leaves the state (abort: clean failed): it is missing from the list, read alone, and woken with its new state.
      await direct.setProvisionState(held[1]!.uuid, 'abort');
      expect(await waits[1]!.done).toBe('changed');
      expect(gets()).toBe(1);
      await ticks(watcher, 2);
      expect(waits.filter((w) => w.outcome !== undefined)).toHaveLength(1);
      watcher.close();
      await Promise.all(waits.map((w) => w.done));
    } finally {
      watcher.close();
    }
    for (const n of held) {
      await direct.setProvisionState(n.uuid, 'abort').catch(() => undefined);
      await direct.setMaintenance(n.uuid, 'test over').catch(() => undefined);
    }
  });

  it('reads a few nodes one by one with limited fields, and ends unchanged waits at their deadline', async () => {
    const [node] = await makeNodes(1);
    const watcher = new NodeWatcher(client, { intervalMs: 100, listThreshold: 4 });
    proxy.requests.length = 0;
    const started = Date.now();
    expect(await watcher.wait(node!.uuid, node!, 500)).toBe('timeout');
    // Timers may fire a millisecond before Date.now() shows the whole delay.
    expect(Date.now() - started).toBeGreaterThanOrEqual(495);
    expect(watcher.reads).toBeGreaterThan(0);
    // On a loaded machine the deadline can fire while the last GET is still on
    // its way to the proxy (CI saw 0 recorded); wait for every started read.
    const reads = await waitFor('every started read recorded', async () => {
      const got = proxy.requests.filter((r) => r.method === 'GET');
      return got.length >= watcher.reads && got;
    }, { timeoutMs: 10_000 });
    expect(reads.map((r) => r.path).filter((p) => !p.startsWith(`/v1/nodes/${node!.uuid}?fields=`))).toEqual([]);
    expect(watcher.watching).toBe(0);
  });

  it('reads a node that stays unchanged less and less often, and still sees it change after a long quiet', async () => {
    const [node] = await makeNodes(1);
    const opts = { intervalMs: 100, listThreshold: 4, quietFactor: 0.5, maxIntervalMs: 800 };
    const steady = new NodeWatcher(client, { ...opts, quietFactor: 0 });
    const backing = new NodeWatcher(client, opts);
    // The same node, unchanged, watched in 1 s slices (as an activity heartbeating between waits) for 3 s by both.
    for (let slice = 0; slice < 3; slice++) {
      const [a, b] = await Promise.all([steady.wait(node!.uuid, node!, 1_000), backing.wait(node!.uuid, node!, 1_000)]);
      expect([a, b]).toEqual(['timeout', 'timeout']);
    }
    console.log(`3 s unchanged: ${steady.reads} reads at a steady 100 ms, ${backing.reads} backing off`);
    // Backing off: a read when half the quiet time so far has passed since the last (at ~0.1, 0.2, 0.4, 0.8, 1.6,
    // 2.4 s), however fast Ironic answers; steady: a read each tick (fewer when Ironic is slow to answer).
    expect(backing.reads).toBeLessThanOrEqual(8);
    expect(backing.reads).toBeGreaterThanOrEqual(4);
    expect(steady.reads).toBeGreaterThan(backing.reads);
    // A change after the quiet is seen at the next read, within maxIntervalMs.
    const waiting = backing.waitFor(node!.uuid, node!, 10_000);
    await direct.setMaintenance(node!.uuid, 'changed after a quiet');
    const changedAt = Date.now();
    const result = await waiting;
    expect(result.outcome).toBe('changed');
    expect(result.state?.maintenance).toBe(true);
    console.log(`change seen ${Date.now() - changedAt} ms after it was made (longest read interval 800 ms)`);
  });

  it('judges every watched node a list brings back, also those not yet due for a read of their own', async () => {
    const [a, b, c] = await makeNodes(3);
    // quietFactor 1, no upper bound: once read, an unchanged node waits as long again as it has been quiet, so it is
    // never due again in this test. Only a list made for another node can show its change.
    // listThreshold 1: every read is a list, also of the one node due.
    const watcher = new NodeWatcher(client, { intervalMs: 100, listThreshold: 1, nodesPerGet: 1e6, quietFactor: 1, maxIntervalMs: 600_000 });
    try {
      const since = Date.now();
      const waitA = track(watcher.wait(a!.uuid, a!, 120_000));
      const waitB = track(watcher.wait(b!.uuid, b!, 120_000));
      await waitFor('a and b read once', async () => watcher.readSince(a!.uuid, since) && watcher.readSince(b!.uuid, since), { timeoutMs: 30_000, intervalMs: 20 });
      await direct.setMaintenance(a!.uuid, 'changed while not due');
      // A third node's waiter is due at once: its list brings a's change with it.
      const waitC = track(watcher.wait(c!.uuid, c!, 120_000));
      expect(await waitA.done).toBe('changed');
      expect(waitB.outcome).toBeUndefined();
      expect(waitC.outcome).toBeUndefined();
    } finally {
      watcher.close();
    }
  });

  it('keeps its waiters across a failed read, and sees the change at a later read', async () => {
    const [node] = await makeNodes(1);
    const watcher = new NodeWatcher(client, { intervalMs: 100, listThreshold: 4, failuresBeforeRelease: 3 });
    proxy.requests.length = 0;
    const own = (r: { method: string; path: string }) => r.method === 'GET' && r.path.startsWith(`/v1/nodes/${node!.uuid}?`);
    // Two reads in a row fail (one short of the release): the waiter stays.
    proxy.fail(own, 2, 503, 'injected');
    const wait = track(watcher.wait(node!.uuid, node!, 120_000));
    await waitFor('two failed reads', async () => watcher.failedReads >= 2, { timeoutMs: 30_000, intervalMs: 20 });
    await ticks(watcher, 1);
    expect(wait.outcome).toBeUndefined();
    await direct.setMaintenance(node!.uuid, 'changed after failed reads');
    expect(await wait.done).toBe('changed');
    expect(watcher.failedReads).toBe(2);
    // The failed reads were answered by the proxy (503); the change was seen by a read Ironic answered.
    expect(proxy.count((r) => own(r) && r.status === 200)).toBeGreaterThanOrEqual(1);
  });

  it('releases every waiter with "error" when reads fail failuresBeforeRelease times in a row, so each activity re-reads and classifies it', async () => {
    const [node] = await makeNodes(1);
    const watcher = new NodeWatcher(client, { intervalMs: 100, listThreshold: 4, failuresBeforeRelease: 3 });
    proxy.fail((r) => r.method === 'GET' && r.path.startsWith(`/v1/nodes/${node!.uuid}?`), 3, 503, 'injected');
    expect(await watcher.wait(node!.uuid, node!, 120_000)).toBe('error');
    expect(watcher.failedReads).toBe(3);
    // A waiter that comes after the failures are over is served by the watcher's reads again.
    const wait = track(watcher.wait(node!.uuid, node!, 120_000));
    await ticks(watcher, 2);
    expect(wait.outcome).toBeUndefined();
    await direct.setMaintenance(node!.uuid, 'changed after the release');
    expect(await wait.done).toBe('changed');
    expect(watcher.failedReads).toBe(3);
  });

  it('tells whether a read since a moment covered a node', async () => {
    const [node] = await makeNodes(1);
    const watcher = new NodeWatcher(client, { intervalMs: 100, listThreshold: 4 });
    const since = Date.now();
    expect(watcher.readSince(node!.uuid, since)).toBe(false);
    const wait = track(watcher.wait(node!.uuid, node!, 120_000));
    await waitFor('a read of the node', async () => watcher.readSince(node!.uuid, since), { timeoutMs: 30_000, intervalMs: 20 });
    expect(watcher.readSince(node!.uuid, Date.now() + 60_000)).toBe(false);
    watcher.close();
    expect(await wait.done).toBe('timeout');
  });

  it('lists every node across pages, following the marker', async () => {
    await makeNodes(7);
    const paged = new IronicClient({ url: proxy.url, listPageSize: 3 });
    proxy.requests.length = 0;
    const all = await paged.listNodeStates(['provision_state']);
    const whole = await direct.listNodeStates(['provision_state']);
    expect(new Set(all.map((n) => n.uuid))).toEqual(new Set(whole.map((n) => n.uuid)));
    expect(all).toHaveLength(whole.length);
    expect(proxy.count((r) => r.path.includes('marker='))).toBe(Math.floor(whole.length / 3));
  });
});
