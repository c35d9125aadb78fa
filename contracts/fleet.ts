/**
 * The fleet workflow's contract, defined once and imported by the workflow,
 * its activities, the API and the tests: what it records per host, the
 * progress it answers, and its pause / resume / cancel updates.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { HostRef } from '../model/host';
import type { FleetInput } from '../model/fleet';

/**
 * pending: not started yet; notStarted: the run ended (cancelled or halted) before it was;
 * cancelled: a cancel with abortInFlight stopped the host's operation (never a failure).
 */
export type FleetHostOutcome = 'pending' | 'inFlight' | 'succeeded' | 'failed' | 'skipped' | 'cancelled' | 'notStarted';
export const FLEET_HOST_OUTCOMES: readonly FleetHostOutcome[] = ['pending', 'inFlight', 'succeeded', 'failed', 'skipped', 'cancelled', 'notStarted'];

export interface FleetHost {
  ref: HostRef;
  outcome: FleetHostOutcome;
  /** When the fleet started the host; the host's own records from then on are this change's. */
  startedAt?: string;
  endedAt?: string;
  /** The host workflow accepted the change: it is never asked for again (a retry, a new run). */
  changeSent?: boolean;
  /** A cancel with abortInFlight is stopping this host (a new run goes on stopping it, not driving it). */
  aborting?: boolean;
  /** failed: the host's error; skipped, cancelled: why the host was left alone or stopped. */
  error?: string;
  reason?: string;
}

/** What the selection activity found, recorded once at start. */
export interface FleetSelection {
  at: string;
  /** `site` is there when the fleet selects by site or caps each site's hosts in flight. */
  hosts: Array<{ ref: HostRef; provisioningState: string; bmcType: string; site?: string }>;
  /** Hosts the explicit list named that do not exist. */
  missing: HostRef[];
}

export type FleetPhase = 'selecting' | 'running' | 'paused' | 'completed' | 'halted' | 'cancelled' | 'dryRun';

export interface FleetState {
  selection?: FleetSelection;
  hosts: FleetHost[];
  paused?: { reason?: string; since: string };
  cancelled?: { reason?: string; at: string; abortInFlight?: boolean };
  halted?: { at: string; reason: string };
  /** The wave under way (0-based; with `waves` only). */
  wave?: number;
  /** Runs so far (continue-as-new carries this state to the next). */
  runs: number;
}

export interface FleetOptions {
  /** Continue as new after this many history events (Temporal suggests it earlier on its own). */
  maxHistoryEvents: number;
  /** How long one wait on a host lasts before the workflow records progress and waits again. */
  pollWindowSeconds: number;
  /** Over this (serialised), the progress is answered as its first page (tests lower it; contracts/fleet-progress-page.ts). */
  progressLimitBytes?: number;
}
export const DEFAULT_FLEET_OPTIONS: FleetOptions = { maxHistoryEvents: 5000, pollWindowSeconds: 300 };

export type FleetCounts = Record<FleetHostOutcome, number>;

export interface FleetProgress {
  name: string;
  input: FleetInput;
  phase: FleetPhase;
  counts: FleetCounts;
  selected: number;
  /** maxConcurrent and maxFailures as counts of this selection; maxConcurrentPerSite as given. */
  limits: { maxConcurrent: number; maxFailures: number; maxConcurrentPerSite?: number };
  /** When the fleet selects by site or caps each site: the counts of each site's hosts, by site name. */
  sites?: Record<string, FleetCounts>;
  selection?: FleetSelection;
  hosts: FleetHost[];
  failures: Array<{ ref: HostRef; error: string }>;
  paused?: FleetState['paused'];
  cancelled?: FleetState['cancelled'];
  halted?: FleetState['halted'];
  runs: number;
  /** With `waves`: the wave under way (1-based), how many there are, and the hosts in it. */
  wave?: FleetWaveProgress;
  /** At the pace of the hosts finished so far (absent until one has, and once nothing more will start). */
  estimatedEnd?: string;
  /** Present when `hosts` is one page (asked for, or the whole would be too large; contracts/fleet-progress-page.ts). */
  page?: FleetProgressPageInfo;
}

export interface FleetWaveProgress {
  current: number;
  count: number;
  /** The wave's hosts, as indexes into `hosts`: [first, end). */
  first: number;
  end: number;
}

/** Without an argument: the whole progress, or its first page when that is over 1 MB; with one, that page. */
export const fleetProgressQuery = defineQuery<FleetProgress, [FleetProgressPageRequest?]>('progress');

export interface FleetControlRequest {
  /** Shown in the progress (at most 256 characters). */
  reason?: string;
  /** cancel only: stop the hosts in flight too, through their own workflows (the host is paused, which cancels its running operation). */
  abortInFlight?: boolean;
}
/** Start no new host until resumed; hosts in flight finish. */
export const pauseFleetUpdate = defineUpdate<FleetProgress, [FleetControlRequest]>('pause');
export const resumeFleetUpdate = defineUpdate<FleetProgress, []>('resume');
/** Start no new host; hosts in flight finish (or, with abortInFlight, are stopped); a powerOff fleet releases its holds. Never a failure. */
export const cancelFleetUpdate = defineUpdate<FleetProgress, [FleetControlRequest]>('cancel');

export const fleetWorkflowId = (name: string): string => `fleet/${name}`;
/** The keyed power-off request a powerOff fleet holds on its hosts. */
export const fleetPowerKey = (name: string): string => `fleet-${name}`;

/** A page of a fleet's per-host progress, as asked for (contracts/fleet-progress-page.ts computes it). */
export interface FleetProgressPageRequest {
  /** Index of the first host (among those with `outcome`, when given). */
  offset?: number;
  /** Hosts in the page, 1 to MAX_PAGE_LIMIT (default DEFAULT_PAGE_LIMIT). */
  limit?: number;
  /** Only the hosts with this outcome. */
  outcome?: FleetHostOutcome;
}

/** What a paged progress says about its `hosts`. */
export interface FleetProgressPageInfo {
  offset: number;
  limit: number;
  /** Hosts matching (all the selected ones when no outcome was asked for). */
  total: number;
  outcome?: FleetHostOutcome;
  /** Why it is a page although none was asked for. */
  reason?: string;
}
