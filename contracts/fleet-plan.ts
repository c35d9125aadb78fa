/**
 * A fleet operation's arithmetic, pure: limits as counts of the selection,
 * the failure budget, counts per outcome, and what the run may do next.
 */
import type { FleetAmount } from '../model/fleet';
import { FLEET_HOST_OUTCOMES, type FleetCounts, type FleetHost, type FleetPhase, type FleetState } from './fleet';

function percentOf(amount: string, total: number, round: (n: number) => number): number {
  return round((Number(amount.slice(0, -1)) * total) / 100);
}

/** maxConcurrent: a count, or a percentage of the selection rounded up; never below 1. */
export function concurrencyLimit(amount: FleetAmount | undefined, selected: number): number {
  if (amount === undefined) return 1;
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
