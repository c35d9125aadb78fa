/**
 * What a run over many hosts (a fleet operation, a pivot) shares: the
 * outcome book (counts kept with each host's outcome, the failure budget
 * checked at each result) and the pause / resume / cancel updates. Pure
 * decisions and handlers; each workflow passes its own update definitions.
 */
import { ApplicationFailure, allHandlersFinished, condition, setHandler, workflowInfo } from '@temporalio/workflow';
import type { UpdateDefinition } from '@temporalio/common';
import type { FleetControlRequest, FleetCounts, FleetHost, FleetHostOutcome } from '../../contracts/fleet';
import type { FleetHostResult } from '../../contracts/fleet-goals';
import { budgetSpent } from '../../contracts/fleet-plan';
import { countedPast } from './history-count';

const now = (): string => new Date().toISOString();
const MAX_REASON = 256;

export function checkReason(req: FleetControlRequest): void {
  if (req?.reason !== undefined && (typeof req.reason !== 'string' || req.reason.length > MAX_REASON)) {
    throw ApplicationFailure.create({ type: 'InvalidRequest', message: `reason: must be a string of at most ${MAX_REASON} characters`, details: [[{ field: 'reason', reason: `must be a string of at most ${MAX_REASON} characters` }]] });
  }
}

export interface RunControlState {
  paused?: { reason?: string; since: string };
  cancelled?: { reason?: string; at: string };
  halted?: { at: string; reason: string };
}

export interface OutcomeBook<H extends FleetHost> {
  setOutcome(h: H, outcome: FleetHostOutcome): void;
  /** Records a host's result (only the first: a host being stopped may still hear from its cancelled wait). */
  settle(h: H, result: FleetHostResult): boolean;
}

/** Counts follow each outcome; once the budget is spent the run is halted. `changed` wakes the run's loop. */
export function outcomeBook<H extends FleetHost>(s: RunControlState, counts: () => FleetCounts, budget: () => number, changed: () => void): OutcomeBook<H> {
  const setOutcome = (h: H, outcome: FleetHostOutcome): void => {
    const c = counts();
    c[h.outcome] -= 1;
    c[outcome] += 1;
    h.outcome = outcome;
    changed();
  };
  return {
    setOutcome,
    settle(h, result) {
      if (h.outcome !== 'inFlight') return false;
      h.endedAt = now();
      if (result.outcome === 'failed') h.error = result.error;
      if (result.outcome === 'skipped' || result.outcome === 'cancelled') h.reason = result.reason;
      setOutcome(h, result.outcome);
      if (!s.halted && budgetSpent(counts(), budget())) s.halted = { at: now(), reason: `${counts().failed} hosts failed; maxFailures allows ${budget()}` };
      return true;
    },
  };
}

export interface ControlUpdates<P> {
  pause: UpdateDefinition<P, [FleetControlRequest]>;
  resume: UpdateDefinition<P, []>;
  cancel: UpdateDefinition<P, [FleetControlRequest]>;
}

/**
 * pause starts no new host until resume; cancel starts none and ends the run once the hosts in
 * flight finish (`onCancel` adds what a kind of run does more). Refused once the run has ended.
 */
export function setControlHandlers<P>(
  defs: ControlUpdates<P>,
  s: RunControlState,
  hooks: { progress: () => P; changed: () => void; ended: () => string | undefined; onCancel?: (req: FleetControlRequest) => void; checkCancel?: (req: FleetControlRequest) => void },
): void {
  const refuseWhenEnded = (): void => {
    const phase = hooks.ended();
    if (phase !== undefined) throw ApplicationFailure.create({ type: 'Conflict', message: phase });
  };
  const done = (): P => {
    hooks.changed();
    return hooks.progress();
  };
  setHandler(
    defs.pause,
    (req: FleetControlRequest) => {
      if (!s.paused && !s.cancelled) s.paused = { ...(req?.reason ? { reason: req.reason } : {}), since: now() };
      return done();
    },
    { validator: (req: FleetControlRequest) => (checkReason(req), refuseWhenEnded()) },
  );
  setHandler(
    defs.resume,
    () => {
      s.paused = undefined;
      return done();
    },
    { validator: refuseWhenEnded },
  );
  setHandler(
    defs.cancel,
    (req: FleetControlRequest) => {
      if (!s.cancelled) s.cancelled = { ...(req?.reason ? { reason: req.reason } : {}), at: now() };
      hooks.onCancel?.(req);
      s.paused = undefined;
      return done();
    },
    { validator: (req: FleetControlRequest) => (checkReason(req), hooks.checkCancel?.(req), refuseWhenEnded()) },
  );
}

/** The progress fields every run over hosts answers (the fleet and the pivot add their own). */
export function baseProgress<H extends FleetHost, S extends RunControlState & { selection?: unknown; hosts: H[]; runs: number }>(
  s: S,
  counts: FleetCounts,
  limits: { maxConcurrent: number; maxFailures: number; maxConcurrentPerSite?: number },
) {
  return {
    counts,
    selected: s.hosts.length,
    limits,
    ...(s.selection ? { selection: s.selection as NonNullable<S['selection']> } : {}),
    hosts: s.hosts,
    ...(s.paused ? { paused: s.paused } : {}),
    ...(s.cancelled ? { cancelled: s.cancelled as NonNullable<S['cancelled']> } : {}),
    ...(s.halted ? { halted: s.halted } : {}),
    runs: s.runs,
  };
}

/**
 * Waits for the run's next change. True when the history has grown long enough (past
 * `maxHistoryEvents`, or Temporal suggests it) that the run must continue as new; its
 * handlers have finished by then.
 */
export async function nextChange(changes: () => number, maxHistoryEvents: number, counted = false): Promise<boolean> {
  // `counted`: by the run's own count (history-count.ts).
  const tooLong = (): boolean =>
    counted ? countedPast(maxHistoryEvents) : workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > maxHistoryEvents;
  if (tooLong()) {
    await condition(allHandlersFinished);
    return true;
  }
  const seen = changes();
  await condition(() => changes() !== seen || tooLong());
  return false;
}
