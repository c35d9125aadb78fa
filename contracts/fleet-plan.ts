/**
 * A fleet operation's arithmetic, pure: limits as counts of the selection,
 * the failure budget, counts per outcome, and what the run may do next.
 */
import type { FleetAmount } from '../model/fleet';
import { DEFAULT_SITE } from '../model/site';
import { FLEET_HOST_OUTCOMES, type FleetCounts, type FleetHost, type FleetHostOutcome, type FleetPhase, type FleetSelection, type FleetState } from './fleet';

function percentOf(amount: string, total: number, round: (n: number) => number): number {
  return round((Number(amount.slice(0, -1)) * total) / 100);
}

/**
 * maxConcurrent: a count, or a percentage of the selection rounded up; never below 1. Unset, 1,
 * unless each site has a cap of its own (`perSite`): then the sites' caps are the only limit.
 */
export function concurrencyLimit(amount: FleetAmount | undefined, selected: number, perSite?: number): number {
  if (amount === undefined) return perSite === undefined ? 1 : Math.max(1, selected);
  const n = typeof amount === 'number' ? amount : percentOf(amount, selected, Math.ceil);
  return Math.max(1, n);
}

/** maxFailures: a count, or a percentage of the selection rounded down (default 0: the first failure halts). */
export function failureBudget(amount: FleetAmount | undefined, selected: number): number {
  if (amount === undefined) return 0;
  return typeof amount === 'number' ? amount : percentOf(amount, selected, Math.floor);
}

/**
 * Where each wave ends, as an index into the selection: the sizes in order
 * (a count, or a percentage of the selection rounded up, at least 1), the
 * last repeating until every host is in a wave. Without waves: one wave.
 */
export function waveEnds(waves: ReadonlyArray<{ size: FleetAmount }> | undefined, selected: number): number[] {
  if (!waves || waves.length === 0 || selected === 0) return [selected];
  const ends: number[] = [];
  let end = 0;
  for (let i = 0; end < selected; i += 1) {
    end = Math.min(selected, end + concurrencyLimit(waves[Math.min(i, waves.length - 1)]!.size, selected));
    ends.push(end);
  }
  return ends;
}

export function countOutcomes(hosts: readonly FleetHost[]): FleetCounts {
  const counts = Object.fromEntries(FLEET_HOST_OUTCOMES.map((o) => [o, 0])) as FleetCounts;
  for (const h of hosts) counts[h.outcome] += 1;
  return counts;
}

/** The budget is spent once more hosts failed than it tolerates. */
export const budgetSpent = (counts: FleetCounts, budget: number): boolean => counts.failed > budget;

/** May another host start now? Not while paused, cancelled or halted, nor beyond the limit. */
export function mayStartMore(s: FleetState, counts: FleetCounts, limit: number): boolean {
  return !s.paused && !s.cancelled && !s.halted && counts.pending > 0 && counts.inFlight < limit;
}

/** The run is over: nothing in flight, and nothing left that it may still start. */
export function finished(s: FleetState, counts: FleetCounts): boolean {
  return counts.inFlight === 0 && (counts.pending === 0 || s.cancelled !== undefined || s.halted !== undefined);
}

/** cancelled and halted show at once, while the hosts in flight finish (their counts say so). */
export function phaseOf(s: FleetState, dryRun: boolean, done: boolean): FleetPhase {
  if (!s.selection) return 'selecting';
  if (dryRun) return 'dryRun';
  if (s.cancelled) return 'cancelled';
  if (s.halted) return 'halted';
  if (done) return 'completed';
  return s.paused ? 'paused' : 'running';
}

/**
 * When the run should end at this pace: the finished hosts' mean duration,
 * times the rounds of `limit` hosts still to go. Undefined until a host has
 * finished, and when nothing is left or the run will start no more.
 */
export function estimatedEnd(s: FleetState, counts: FleetCounts, limit: number, nowMs: number): string | undefined {
  const remaining = counts.pending + counts.inFlight;
  if (remaining === 0 || s.paused || s.cancelled || s.halted) return undefined;
  let total = 0;
  let finishedHosts = 0;
  for (const h of s.hosts) {
    if ((h.outcome !== 'succeeded' && h.outcome !== 'failed') || !h.startedAt || !h.endedAt) continue;
    total += Date.parse(h.endedAt) - Date.parse(h.startedAt);
    finishedHosts += 1;
  }
  if (finishedHosts === 0) return undefined;
  return new Date(nowMs + Math.ceil(remaining / limit) * (total / finishedHosts)).toISOString();
}

/** Each selected host's site, by its index (the default site for a selection that did not read sites). */
export function selectionSites(selection: FleetSelection | undefined, count: number): string[] {
  return Array.from({ length: count }, (_, i) => selection?.hosts[i]?.site ?? DEFAULT_SITE);
}

/** The counts of each site's hosts, the sites in the order their first host was selected. */
export function countsBySite(hosts: ReadonlyArray<{ outcome: FleetHostOutcome }>, sites: readonly string[]): Record<string, FleetCounts> {
  const by: Record<string, FleetCounts> = {};
  hosts.forEach((h, i) => {
    const site = sites[i] ?? DEFAULT_SITE;
    by[site] ??= countOutcomes([]);
    by[site][h.outcome] += 1;
  });
  return by;
}

/**
 * The fleet's own per-site budget: which pending host starts next so that no site has more than
 * `perSite` hosts in flight, while the other sites keep going. Hosts start in selection order,
 * skipping those of a site at its cap; without a cap that is the selection's order itself.
 *
 * Temporal's task-queue fairness and rate limits work per task, and a host is in flight across
 * all the tasks of its operation (hours of a deploy, mostly waiting): only the fleet knows when a
 * host's change began and ended, so the budget is kept here.
 */
export class SiteBudget {
  /** Each site's hosts by index, in order, and the first that may still be pending. */
  private readonly lanes = new Map<string, { indexes: number[]; head: number }>();
  /** Hosts started (or found in flight), by index, with their site; those that finished go at the next look. */
  private readonly flying = new Map<number, string>();

  constructor(
    hosts: ReadonlyArray<{ outcome: FleetHostOutcome }>,
    private readonly sites: readonly string[],
    private readonly perSite: number | undefined,
  ) {
    hosts.forEach((h, i) => {
      const site = sites[i] ?? DEFAULT_SITE;
      let lane = this.lanes.get(site);
      if (!lane) this.lanes.set(site, (lane = { indexes: [], head: 0 }));
      lane.indexes.push(i);
      // In flight when a previous run handed over: they count against their site from the start.
      if (h.outcome === 'inFlight') this.flying.set(i, site);
    });
  }

  /** Hosts in flight per site now. */
  inFlight(hosts: ReadonlyArray<{ outcome: FleetHostOutcome }>): Map<string, number> {
    const by = new Map<string, number>();
    for (const [i, site] of this.flying) {
      if (hosts[i]?.outcome !== 'inFlight') this.flying.delete(i);
      else by.set(site, (by.get(site) ?? 0) + 1);
    }
    return by;
  }

  /**
   * The index of the next host to start, before `end` (the wave's end): the first pending host in
   * selection order whose site is below its cap; undefined when none may start now.
   */
  next(hosts: ReadonlyArray<{ outcome: FleetHostOutcome }>, end: number): number | undefined {
    const flying = this.perSite === undefined ? undefined : this.inFlight(hosts);
    let best: number | undefined;
    for (const [site, lane] of this.lanes) {
      // A host leaves `pending` once and never comes back to it.
      while (lane.head < lane.indexes.length && hosts[lane.indexes[lane.head]!]!.outcome !== 'pending') lane.head += 1;
      const i = lane.indexes[lane.head];
      if (i === undefined || i >= end || (best !== undefined && i > best)) continue;
      if (flying && (flying.get(site) ?? 0) >= this.perSite!) continue;
      best = i;
    }
    return best;
  }

  /** The host at `i` was started. */
  started(i: number): void {
    this.flying.set(i, this.sites[i] ?? DEFAULT_SITE);
  }

  /**
   * Hosts that can be in flight at once: the overall limit, or less when the sites with hosts still
   * to start or in flight are too few to fill it at their cap (what the estimate of the end counts in).
   */
  concurrency(hosts: ReadonlyArray<{ outcome: FleetHostOutcome }>, limit: number): number {
    if (this.perSite === undefined) return limit;
    const flying = this.inFlight(hosts);
    let open = 0;
    for (const [site, lane] of this.lanes) {
      if ((flying.get(site) ?? 0) > 0 || lane.indexes.slice(lane.head).some((i) => hosts[i]!.outcome === 'pending')) open += 1;
    }
    return Math.max(1, Math.min(limit, open * this.perSite));
  }
}
