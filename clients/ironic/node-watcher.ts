/**
 * One poller per worker for every activity waiting on an Ironic node.
 *
 * Hundreds of activities each polling their own node cost Ironic (a single
 * Python process) a request per node per tick, and at fleet scale that
 * polling is most of its work. Here waiters register the state they last saw;
 * one loop reads the states of all watched nodes (a single fields-limited
 * list when many are watched, a small GET each when few) and wakes a waiter
 * only when its node changed, vanished, or its wait ran out. A list costs
 * Ironic in proportion to every node it has, watched or not: a dozen nodes in
 * flight among a thousand at rest are read with a GET each (readsByList), except
 * that nodes waiting in one transitional state (deploying, cleaning, ...) are
 * read with one list filtered by that state, which costs Ironic only the nodes
 * in it (planRead).
 */
import type { IronicClient } from './client';
import { TRANSITIONAL_STATES, type IronicNode } from './types';

export interface WatchOptions {
  /**
   * Shortest time between two reads. Grows to twice the last read's duration when Ironic is slow, up to
   * `tickLimit` times itself (nextTick).
   */
  intervalMs: number;
  /**
   * The longest pause between two reads, in `intervalMs`. A read's duration on a busy Ironic is mostly the time its
   * request waits in Ironic's API queue (10 threads), not what the read costs Ironic (a list of 100 nodes: 0.8 s of
   * a thread behind 20-40 s of queue at 100 Redfish hosts): backing off to twice that left every waiter a whole
   * list's queue wait late on top of the queue itself, and the activities re-read their nodes whole meanwhile.
   */
  tickLimit: number;
  /**
   * Reads that fail in a row (Ironic unanswered or refusing) before the waiters are released with `error` to read
   * their nodes on their own. A single failed read on a saturated Ironic (one list timed out) is read again at the
   * next tick: releasing every waiter to a whole-node GET each would add a request per waiter to that queue.
   */
  failuresBeforeRelease: number;
  /** From this many watched nodes on, one list request may replace per-node reads (see nodesPerGet). */
  listThreshold: number;
  /**
   * What one GET of a node costs Ironic, in nodes of a list: a list replaces the GETs only when the watched nodes
   * times this reach the nodes Ironic has (as the last list counted them).
   */
  nodesPerGet: number;
  /** How old that count may grow while GETs are read before a list counts again. */
  recountMs: number;
  /**
   * From this many watched nodes seen in one transitional provision state (deploying, cleaning, ...), one list of
   * the nodes in that state (`?provision_state=`) replaces their GETs. Such a list costs Ironic per node in that
   * state only, and nodes do not rest there: the fleet at rest is not read.
   */
  stateListMin: number;
  /**
   * A node unchanged for a while is read less often: every `quietFactor` of the time it has been unchanged (at least
   * `intervalMs`, at most `maxIntervalMs`). A change comes within that fraction of the wait so far: a fake-hardware
   * step ending in a second is seen within `intervalMs`, an agent's deploy after ten minutes within `maxIntervalMs`,
   * and a node waiting for minutes costs Ironic a read every few seconds instead of four a second.
   */
  quietFactor: number;
  maxIntervalMs: number;
  /**
   * A node the watcher saw enter a state it has seen others leave (a transitional provision state, a pending power
   * change) is first read there after `firstReadFraction` of the time that state usually took (firstReadAfter), at
   * most `firstReadMaxMs` later: a step that takes seconds is not read four times a second from its start. Later
   * reads follow the quiet schedule; a change before the first read is seen that much later.
   */
  firstReadFraction: number;
  firstReadMaxMs: number;
}

/**
 * A fields-limited GET of one node costs Ironic about what listing this many nodes does: measured with
 * bench/ironic-read-cost.ts (2026-11-28, Ironic of the test stack): a GET 15-16 ms of its CPU, a list of 100 nodes
 * 59 ms (25 nodes per GET), of 500 nodes 562 ms (14.5). The lower one: past it, a list is surely cheaper.
 */
const NODES_PER_GET = 15;

export const DEFAULT_WATCH: WatchOptions = {
  intervalMs: 250,
  tickLimit: 8,
  failuresBeforeRelease: 3,
  listThreshold: 6,
  nodesPerGet: NODES_PER_GET,
  recountMs: 60_000,
  stateListMin: 2,
  quietFactor: 0.1,
  maxIntervalMs: 5_000,
  firstReadFraction: 0.75,
  firstReadMaxMs: 10_000,
};

/** How many of a state's latest times are kept, and how many it takes before they set a first read. */
const TIMES_KEPT = 9;
const TIMES_NEEDED = 3;

/**
 * The states whose times are learned: Ironic at work on the node (a transitional provision state) or on its power.
 * A resting state ends when someone sends a verb, not after a time of its own.
 */
export function timedState(n: Pick<NodeState, 'provision_state' | 'target_power_state'>): string | undefined {
  if (TRANSITIONAL_STATES.has(n.provision_state)) return n.provision_state;
  return n.target_power_state ? `power → ${n.target_power_state}` : undefined;
}

/**
 * When to read first a node that entered a state with these recent times (ms): a fraction of their median, within
 * [intervalMs, firstReadMaxMs]; undefined (read at once) until enough were seen.
 */
export function firstReadAfter(times: readonly number[] | undefined, opts: Pick<WatchOptions, 'intervalMs' | 'firstReadFraction' | 'firstReadMaxMs'>): number | undefined {
  if (!times || times.length < TIMES_NEEDED) return undefined;
  const sorted = [...times].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  return Math.min(Math.max(opts.intervalMs, median * opts.firstReadFraction), opts.firstReadMaxMs);
}

/**
 * A state's time as the watcher's reads bracket it: it was entered at the read that saw it (`since`), was still
 * there at the last read before (`lastSame`, `since` when none) and gone at `seenGone`. The middle of the bracket:
 * a first read that comes late and finds the state already over says only that it took less, and the times it
 * records shrink rather than grow with the wait.
 */
export const bracketedTime = (since: number, lastSame: number, seenGone: number): number => (Math.max(lastSame, since) + seenGone) / 2 - since;

/** How long after its last read a node unchanged for `quietMs` is read again. */
export function readInterval(quietMs: number, opts: Pick<WatchOptions, 'intervalMs' | 'quietFactor' | 'maxIntervalMs'>): number {
  return Math.min(Math.max(opts.intervalMs, quietMs * opts.quietFactor), Math.max(opts.intervalMs, opts.maxIntervalMs));
}

/**
 * The pause before the next read after one that took `readMs` (`failed`: it got no answer, or an error): twice the
 * read's time (a slow Ironic is not read back to back), within [intervalMs, tickLimit × intervalMs]; the longest
 * after a failure.
 */
export function nextTick(readMs: number, failed: boolean, opts: Pick<WatchOptions, 'intervalMs' | 'tickLimit'>): number {
  const limit = Math.max(1, opts.tickLimit) * opts.intervalMs;
  return failed ? limit : Math.min(Math.max(opts.intervalMs, 2 * readMs), limit);
}

/** Whether the waiters are released with `error` after `failures` failed reads in a row (a first failure is read again). */
export const releaseAfter = (failures: number, opts: Pick<WatchOptions, 'failuresBeforeRelease'>): boolean => failures >= Math.max(1, opts.failuresBeforeRelease);

/** Whether one list of every node is the cheaper read for `watched` nodes, Ironic having `total` (unknown: never listed). */
export function readsByList(watched: number, total: number | undefined, opts: Pick<WatchOptions, 'listThreshold' | 'nodesPerGet'>): boolean {
  if (watched < opts.listThreshold) return false;
  // Until a list has counted the nodes, list: many watched at once is the fleet's case.
  return total === undefined || watched * opts.nodesPerGet >= total;
}

/** How one read of the watched nodes asks Ironic: every node in one list, or lists by provision state and a GET for the rest. */
export interface ReadPlan {
  all: boolean;
  /** Transitional provision state -> the watched nodes last seen in it, read with one list of that state. */
  byState: Map<string, string[]>;
  /** Read with a GET each. */
  single: string[];
}

/** The read for these watched nodes (each with the provision state its waiter saw), Ironic having `total` (unknown: never listed). */
export function planRead(watched: readonly { id: string; state: string }[], total: number | undefined, opts: Pick<WatchOptions, 'listThreshold' | 'nodesPerGet' | 'stateListMin'>): ReadPlan {
  if (readsByList(watched.length, total, opts)) return { all: true, byState: new Map(), single: [] };
  const groups = new Map<string, string[]>();
  for (const { id, state } of watched) {
    if (!TRANSITIONAL_STATES.has(state)) continue;
    const ids = groups.get(state) ?? [];
    ids.push(id);
    groups.set(state, ids);
  }
  const byState = new Map([...groups].filter(([, ids]) => ids.length >= opts.stateListMin));
  const listed = new Set([...byState.values()].flat());
  return { all: false, byState, single: watched.map((w) => w.id).filter((id) => !listed.has(id)) };
}

/** The fields a drive loop's decisions depend on. */
export const WATCHED_FIELDS = [
  'uuid',
  'provision_state',
  'target_provision_state',
  'power_state',
  'target_power_state',
  'maintenance',
  'last_error',
  // A verb that takes the node through its states and back (manageable -> inspecting -> manageable between two
  // reads) still moves this: a waiter that saw the node before its verb is woken without reading it after the verb.
  'provision_updated_at',
] as const;

export type NodeState = Pick<IronicNode, (typeof WATCHED_FIELDS)[number]>;

export const stateKey = (n: NodeState): string =>
  JSON.stringify([n.provision_state, n.target_provision_state, n.power_state, n.target_power_state, n.maintenance, n.last_error, n.provision_updated_at ?? null]);

export type WaitOutcome = 'changed' | 'gone' | 'timeout' | 'error';

/** How a wait ended, with the node's state as the watcher read it when it changed. */
export interface WaitResult {
  outcome: WaitOutcome;
  /** Set with `changed`: the watched fields as read, so a caller still waiting need not read the node again. */
  state?: NodeState;
}

interface Quiet {
  key: string;
  since: number;
  readAt: number;
  /** Set when a read of the watcher saw the node enter its state (so `since` is when it did, within a read): its timed state. */
  entered?: string;
  /** No read since that one: the first read waits for the state's usual time (firstReadAfter). */
  fresh?: boolean;
}

interface Waiter {
  seen: string;
  /** When it registered (Date.now()): a read that started before may show the node older than the waiter saw it (loop). */
  since: number;
  /** The provision state seen: waiters of a transitional one are read together (planRead). */
  state: string;
  /** Fires the deadline on its own: a slow list must never delay a heartbeat past its timeout. */
  timer: NodeJS.Timeout;
  resolve: (result: WaitResult) => void;
}

export class NodeWatcher {
  private readonly waiters = new Map<string, Set<Waiter>>();
  private looping = false;
  /** Reads started (answered or not), for the benchmark and tests. */
  reads = 0;
  /** Reads that failed (no answer in time, or an error), and how many of the latest ones did in a row. */
  failedReads = 0;
  private failuresInRow = 0;
  /** Nodes Ironic had at the last list, and when. */
  private counted: { total: number; at: number } | undefined;
  /**
   * Per watched node: the state last seen, since when it has been so, and when it was last read. Kept across
   * waiters: an activity that waits in slices (a heartbeat each) must not make its node look freshly changed.
   */
  private readonly quiet = new Map<string, Quiet>();
  /** Per timed state (timedState): how long the latest nodes the watcher saw enter it stayed there, in ms. */
  private readonly times = new Map<string, number[]>();

  private readonly opts: WatchOptions;

  constructor(
    private readonly ironic: IronicClient,
    opts: Partial<WatchOptions> = {},
  ) {
    this.opts = { ...DEFAULT_WATCH, ...opts };
  }

  /** Resolves once `node` differs from what the caller saw, is gone, or `maxWaitMs` passed. */
  async wait(nodeId: string, seen: NodeState, maxWaitMs: number): Promise<WaitOutcome> {
    return (await this.waitFor(nodeId, seen, maxWaitMs)).outcome;
  }

  /** As wait, with the state read when the node changed. */
  waitFor(nodeId: string, seen: NodeState, maxWaitMs: number): Promise<WaitResult> {
    return new Promise((resolve) => {
      let set = this.waiters.get(nodeId);
      if (!set) this.waiters.set(nodeId, (set = new Set()));
      const waiter: Waiter = {
        seen: stateKey(seen),
        since: Date.now(),
        state: seen.provision_state,
        timer: setTimeout(() => this.settle(nodeId, (w) => (w === waiter ? { outcome: 'timeout' } : undefined)), maxWaitMs),
        resolve,
      };
      set.add(waiter);
      const q = this.quiet.get(nodeId);
      if (!q || q.key !== waiter.seen) this.quiet.set(nodeId, { key: waiter.seen, since: Date.now(), readAt: 0 });
      if (!this.looping) {
        this.looping = true;
        void this.loop();
      }
    });
  }

  /** Releases every waiter (they re-read on their own) and lets the loop end. */
  close(): void {
    for (const id of [...this.waiters.keys()]) this.settle(id, () => ({ outcome: 'timeout' }));
  }

  /**
   * Whether a read that started at or after `since` (a Date.now()) covered `nodeId`: the watcher has seen the node
   * as it is since then, so a caller that saw no change knows the node did not move in that read's eyes.
   */
  readSince(nodeId: string, since: number): boolean {
    return (this.quiet.get(nodeId)?.readAt ?? 0) >= since;
  }

  get watching(): number {
    return this.waiters.size;
  }

  /** Drops what is known of nodes nobody has waited on for a while. */
  private forget(now: number): void {
    if (this.quiet.size <= this.waiters.size) return;
    for (const [id, q] of this.quiet) if (!this.waiters.has(id) && now - Math.max(q.readAt, q.since) > 10 * this.opts.maxIntervalMs) this.quiet.delete(id);
  }

  private learn(state: string, ms: number): void {
    const kept = this.times.get(state) ?? [];
    kept.push(ms);
    if (kept.length > TIMES_KEPT) kept.shift();
    this.times.set(state, kept);
  }

  private settle(nodeId: string, decide: (w: Waiter) => WaitResult | undefined): void {
    const set = this.waiters.get(nodeId);
    if (!set) return;
    for (const w of set) {
      const outcome = decide(w);
      if (outcome) {
        set.delete(w);
        clearTimeout(w.timer);
        w.resolve(outcome);
      }
    }
    if (set.size === 0) this.waiters.delete(nodeId);
  }

  private async read(ids: string[]): Promise<Map<string, NodeState>> {
    this.reads += 1;
    const recount = this.counted !== undefined && Date.now() - this.counted.at > this.opts.recountMs;
    const watched = ids.map((id) => ({ id, state: this.waiters.get(id)?.values().next().value?.state ?? '' }));
    const plan = planRead(watched, recount ? undefined : this.counted?.total, this.opts);
    if (plan.all) {
      const all = await this.ironic.listNodeStates([...WATCHED_FIELDS]);
      this.counted = { total: all.length, at: Date.now() };
      return new Map(all.map((n) => [n.uuid, n]));
    }
    const states = new Map<string, NodeState>();
    const single = [...plan.single];
    await Promise.all(
      [...plan.byState].map(async ([state, group]) => {
        const listed = await this.ironic.listNodeStates([...WATCHED_FIELDS], undefined, { provision_state: state });
        for (const n of listed) states.set(n.uuid, n);
        // Gone from the list: moved on (or deleted), read on its own to tell which and where to.
        single.push(...group.filter((id) => !states.has(id)));
      }),
    );
    const found = await Promise.all(single.map((id) => this.ironic.getNodeState(id, [...WATCHED_FIELDS])));
    for (const n of found) if (n) states.set(n.uuid, n);
    return states;
  }

  private async loop(): Promise<void> {
    let interval = this.opts.intervalMs;
    try {
      while (this.waiters.size > 0) {
        await new Promise((r) => setTimeout(r, interval));
        if (this.waiters.size === 0) break;
        const now = Date.now();
        const ids = [...this.waiters.keys()].filter((id) => {
          const q = this.quiet.get(id);
          if (!q) return true;
          const first = q.fresh && q.entered ? firstReadAfter(this.times.get(q.entered), this.opts) : undefined;
          if (first !== undefined && now - q.since < first) return false;
          return now - q.readAt >= readInterval(now - q.since, this.opts);
        });
        this.forget(now);
        if (ids.length === 0) continue;
        const watched = [...this.waiters.keys()];
        /** What the watcher knew of each watched node when this read started. */
        const knewAtStart = new Map(watched.map((id) => [id, this.quiet.get(id)?.key]));
        const started = Date.now();
        let states: Map<string, NodeState> | undefined;
        try {
          states = await this.read(ids);
          this.failuresInRow = 0;
        } catch {
          this.failedReads += 1;
          this.failuresInRow += 1;
        }
        // One failed read is read again at the next tick, the waiters kept (each still ends at its own deadline).
        // Only Ironic failing read after read lets every waiter re-read on its own, where the error is classified
        // and retried by the activity's policy.
        if (!states && !releaseAfter(this.failuresInRow, this.opts)) {
          interval = nextTick(Date.now() - started, true, this.opts);
          continue;
        }
        // A list brings the state of nodes not yet due for a read (their quiet schedule, their first read after
        // entering a state) at no cost of its own: they are judged now, not a read later. On a busy Ironic a read
        // can wait tens of seconds in its queue, and a node that changed just after one read came due would
        // otherwise be seen only at the second list after its change.
        const judged = new Set(ids);
        if (states) for (const id of watched) if (states.has(id)) judged.add(id);
        for (const id of judged) {
          const read = states?.get(id);
          const q = this.quiet.get(id);
          // A quiet record made after the read started (a waiter that saw the node newer) is not overwritten by it.
          if (q && read && q.since <= started) {
            const key = stateKey(read);
            if (key !== q.key) {
              if (q.entered) this.learn(q.entered, bracketedTime(q.since, q.readAt, started));
              Object.assign(q, { key, since: started, entered: timedState(read), fresh: true });
            } else q.fresh = false;
            q.readAt = started;
          }
          this.settle(id, (w) => {
            if (!states) return { outcome: 'error' };
            // Registered while the read was under way, having seen the node otherwise than the watcher had: the
            // caller may have seen it newer than this read did. (A waiter that waits in slices registers again with
            // what the watcher had: judged, or no read slower than a slice would ever wake anyone.)
            if (w.since > started && w.seen !== knewAtStart.get(id)) return undefined;
            const state = states.get(id);
            if (!state) return { outcome: 'gone' };
            return stateKey(state) !== w.seen ? { outcome: 'changed', state } : undefined;
          });
        }
        interval = nextTick(Date.now() - started, !states, this.opts);
      }
    } finally {
      this.looping = false;
      // A waiter that registered while the loop was ending starts a new one.
      if (this.waiters.size > 0) {
        this.looping = true;
        void this.loop();
      }
    }
  }
}
