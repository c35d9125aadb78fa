/**
 * Pages of a fleet operation's per-host progress. At a few thousand hosts the
 * whole progress (every host, and the selection beside it) passes 1 MB; at
 * 10,000 it nears gRPC's 4 MB message limit for a query and is past the 2 MB
 * Temporal accepts for one payload in history (an update's result, the run's
 * result), where an oversized payload fails the workflow task. So a progress
 * larger than PROGRESS_LIMIT_BYTES is answered as its first page, and any page
 * can be asked for. Pure: used by the workflow and its tests.
 */
import type { FleetHostOutcome, FleetProgress, FleetProgressPageRequest } from './fleet';

export type { FleetProgressPageInfo, FleetProgressPageRequest } from './fleet';

/** Over this (serialised), a progress is answered as a page. */
export const PROGRESS_LIMIT_BYTES = 1_000_000;
export const DEFAULT_PAGE_LIMIT = 1000;
export const MAX_PAGE_LIMIT = 5000;
/** A page's `failures` are the latest ones (all of them are hosts with outcome `failed`, in the pages). */
export const PAGE_FAILURES = 100;


const whole = (v: unknown, fallback: number, min: number, max: number): number =>
  typeof v === 'number' && Number.isInteger(v) ? Math.min(Math.max(v, min), max) : fallback;

/**
 * The progress with `hosts` cut to one page and the selection's own host list left out (each
 * selected host is in the pages, in the same order); failures stay whole (the budget bounds them).
 */
export function progressPage(p: FleetProgress, req: FleetProgressPageRequest, reason?: string): FleetProgress {
  const matching = req.outcome ? p.hosts.filter((h) => h.outcome === req.outcome) : p.hosts;
  const offset = whole(req.offset, 0, 0, Number.MAX_SAFE_INTEGER);
  const limit = whole(req.limit, DEFAULT_PAGE_LIMIT, 1, MAX_PAGE_LIMIT);
  return {
    ...p,
    hosts: matching.slice(offset, offset + limit),
    ...(p.selection ? { selection: { ...p.selection, hosts: [] } } : {}),
    failures: p.failures.slice(-PAGE_FAILURES),
    page: { offset, limit, total: matching.length, ...(req.outcome ? { outcome: req.outcome } : {}), ...(reason ? { reason } : {}) },
  };
}

/** `limit`: PROGRESS_LIMIT_BYTES, or a test's lower one (the fleet's options). */
export const progressTooLarge = (p: FleetProgress, limit = PROGRESS_LIMIT_BYTES): boolean => JSON.stringify(p).length > limit;

/** The first page of a progress too large to answer whole. */
export const firstPage = (p: FleetProgress, limit = PROGRESS_LIMIT_BYTES): FleetProgress =>
  progressPage(p, {}, `the whole progress of ${p.hosts.length} hosts is over ${limit} bytes: ask for pages (offset, limit, outcome)`);

/** The whole progress when it is small enough to carry, else its first page. */
export const boundedProgress = (p: FleetProgress, limit = PROGRESS_LIMIT_BYTES): FleetProgress => (progressTooLarge(p, limit) ? firstPage(p, limit) : p);
