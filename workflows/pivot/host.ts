/**
 * One host of a pivot: pre-check, freeze, export, import, hand over, verify,
 * remove the source. Each step is recorded before the next starts, so a
 * retry or a new run resumes at the step it was in (every activity is
 * idempotent). A failure before hand-over rolls back (the target's copy
 * removed, the source unfrozen); after it, the move only goes forward.
 */
import { ActivityFailure, ApplicationFailure, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { createPivotActivities } from '../../activities/pivot/activities';
import { ACTIVITY_OPTIONS } from '../common/activity-options';
import { DEFAULT_HOST_TIMEOUT_SECONDS } from '../../model/fleet';
import type { PivotInput } from '../../model/pivot';
import type { FleetHostResult } from '../../contracts/fleet-goals';
import type { PivotHost, PivotManifest, PivotOptions, PivotStep } from '../../contracts/pivot';

type PivotActivities = ReturnType<typeof createPivotActivities>;
export const pivotCalls = proxyActivities<PivotActivities>(ACTIVITY_OPTIONS.pivotCall);
/** Waits on a host workflow (idle, detached, gone). */
const waitCalls = proxyActivities<PivotActivities>(ACTIVITY_OPTIONS.temporalWait);

function windowCalls(windowSeconds: number) {
  return proxyActivities<PivotActivities>(ACTIVITY_OPTIONS.pivotWindow(windowSeconds));
}

const message = (err: unknown): string => {
  const cause = err instanceof ActivityFailure ? (err.cause ?? err) : err;
  return cause instanceof Error ? cause.message : String(cause);
};

/** PIVOT_TARGET_REFUSED (activities/pivot/api-planes.ts), named here: workflows import no activity code. */
const targetRefused = (err: unknown): boolean => err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === 'PivotTargetRefused';

/** Moves one host as far as it goes; `step` records each step reached, `settle` the result. */
export async function runPivotHost(
  host: PivotHost,
  input: PivotInput,
  options: PivotOptions,
  step: (host: PivotHost, to: PivotStep) => void,
  settle: (host: PivotHost, result: FleetHostResult) => void,
): Promise<void> {
  const call = { pivot: input.name, ref: host.ref, source: input.source, target: input.target };
  let manifest: PivotManifest | undefined;
  // A run that ended mid-roll-back: finish it.
  if (host.step === 'rollback') return rollBackHost(host, call, host.error ?? 'the move failed before hand-over', step, settle);
  try {
    if ((host.step ?? 'precheck') === 'precheck') {
      const checked = await pivotCalls.precheckPivotHost(call);
      if ('skip' in checked) return settle(host, { outcome: 'skipped', reason: checked.skip });
      step(host, 'freeze');
    }
    if (host.step === 'freeze') {
      await waitCalls.freezePivotHost(call);
      step(host, 'export');
    }
    // A new run that finds the host at import exports again: the host is frozen, so the export is the same.
    if (host.step === 'export' || host.step === 'import') {
      manifest = await pivotCalls.exportPivotHost(call);
      host.expect = manifest.expect;
      step(host, 'import');
      await pivotCalls.importPivotHost({ ...call, manifest });
      step(host, 'handover');
    }
  } catch (err) {
    if (isCancellation(err)) throw err;
    return rollBackHost(host, call, `${host.step ?? 'precheck'} failed: ${message(err)}`, step, settle);
  }
  try {
    if (host.step === 'handover') {
      // From here on the source lets go: the only way is forward.
      await waitCalls.detachPivotSource(call);
      // An API target is created here (nothing exists there before hand-over): it needs the export, or the expectation to rebuild it.
      // By id the workflow cannot tell an API target from a Kubernetes one: it sends what an API target needs, the other ignores it.
      await pivotCalls.releasePivotTarget(input.target.api || input.target.plane ? { ...call, ...(manifest ? { manifest } : {}), ...(host.expect ? { expect: host.expect } : {}) } : call);
      step(host, 'verify');
    }
    if (host.step === 'verify') {
      const timeoutSeconds = input.hostTimeoutSeconds ?? DEFAULT_HOST_TIMEOUT_SECONDS;
      const deadline = Date.parse(host.startedAt!) + timeoutSeconds * 1000;
      for (;;) {
        const left = deadline - Date.now();
        if (left <= 0) return settle(host, { outcome: 'failed', error: `the target did not adopt the host within hostTimeoutSeconds (${timeoutSeconds} s); the source has let go, so the pivot goes no further back` });
        const seen = await windowCalls(options.pollWindowSeconds).awaitPivotTarget({ ...call, expect: host.expect!, windowMs: Math.min(left, options.pollWindowSeconds * 1000) });
        if ('matched' in seen) break;
      }
      step(host, 'remove');
    }
    if (host.step === 'remove') {
      await waitCalls.removePivotSource(call);
      step(host, 'done');
    }
    settle(host, { outcome: 'succeeded' });
  } catch (err) {
    if (isCancellation(err)) throw err;
    // An API target refused the create and the source took the host back: a roll-back, not a host left to the target.
    if (targetRefused(err)) {
      host.rolledBack = true;
      return settle(host, { outcome: 'failed', error: `handover failed: ${message(err)}` });
    }
    settle(host, { outcome: 'failed', error: `${host.step} failed after hand-over (the target keeps the host): ${message(err)}` });
  }
}

/** A failure before hand-over: remove what the target got, unfreeze the source, and record both. */
export async function rollBackHost(
  host: PivotHost,
  call: Parameters<PivotActivities['rollbackPivotHost']>[0],
  error: string,
  step: (host: PivotHost, to: PivotStep) => void,
  settle: (host: PivotHost, result: FleetHostResult) => void,
  /** A cancelled pivot's host is rolled back as cancelled, never a failure. */
  cancelled = false,
): Promise<void> {
  if (host.step === 'precheck' || host.step === undefined) return settle(host, { outcome: 'failed', error });
  host.error = error;
  step(host, 'rollback');
  try {
    await waitCalls.rollbackPivotHost(call);
    host.rolledBack = true;
    const undone = `${error}; rolled back: the target's copy removed, the source unfrozen`;
    settle(host, cancelled ? { outcome: 'cancelled', reason: undone } : { outcome: 'failed', error: undone });
  } catch (err) {
    if (isCancellation(err)) throw err;
    settle(host, { outcome: 'failed', error: `${error}; the roll-back failed too: ${message(err)}` });
  }
}
