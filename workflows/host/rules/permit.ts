/**
 * The host's side of the provisioning limit (docs/kubernetes.md, *Provisioning limit*): before inspecting, provisioning or deprovisioning, a
 * host asks its task queue's limiter for a permit and waits, in the state it
 * is in, until the limiter's signal says go; it shows `operationalStatus:
 * delayed` only once the limiter says the limit holds it (a host under the
 * limit is granted at once and never shows it, as in Metal3).
 * The permit goes back when the operation ends (however it ends); a place in
 * the queue goes back when the host no longer wants it (paused, deleted, a
 * new decision) or its run is cancelled.
 */
import {
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { OperationalStatus, ProvisioningState } from '../../../model/host';
import type { LimiterActivities } from '../../../activities/limiter/activities';
import { LOCAL_ACTIVITY_OPTIONS } from '../../common/activity-options';
import { limiterWorkflowId, permitGrantedSignal, permitQueuedSignal, releasePermitSignal } from '../../../contracts/limiter';
import { now, type HostContext } from '../context';

/** Asked on each inspect, provision and deprovision, answered at once without a limit: a local activity. */
const limiterLocal = proxyLocalActivities<LimiterActivities>(LOCAL_ACTIVITY_OPTIONS.limiterRequest);

export interface PermitKeeper {
  /**
   * Asks for a permit (once per wanted operation) and waits for it. `granted: false`:
   * `woken()` said something changed first; the place in the queue is kept until
   * `release()` (the next decision may want it again).
   */
  acquire(state: ProvisioningState, woken: () => boolean): Promise<{ granted: boolean; delayedSince?: string }>;
  /**
   * Gives back the permit or the place in the queue; nothing when there is none. Not awaited:
   * the signal leaves with this workflow task, so what the host records next (an operation's
   * end) is never later than the next holder's start.
   */
  release(): void;
  /**
   * Release signals sent but not yet delivered. The server drops a signal whose sender's
   * run has closed before delivering it, so a run awaits them before it continues as new
   * or ends, or the permit stays held.
   */
  undelivered(): boolean;
  delivered(): Promise<void>;
}

interface Pending {
  requestId: string;
  unlimited: boolean;
  granted: boolean;
  /** The limiter said the limit holds it: the host shows `delayed`. */
  held: boolean;
  delayedSince?: string;
  /** The limiter knows this run asks (a place carried from the run before is announced again). */
  announced: boolean;
  /** Carried from the run before, still waiting: the status to go back to (the carried one says `delayed`). */
  statusBefore?: OperationalStatus;
}

export function permitKeeper(ctx: HostContext): PermitKeeper {
  const { s } = ctx;
  let pending = carriedRequest(ctx);
  let seq = 0;
  const sending = new Set<Promise<void>>();

  const giveBack = (requestId: string): void => {
    // Also from a cancelled run: the release is what frees the permit for the next host.
    const sent: Promise<void> = CancellationScope.nonCancellable(() =>
      getExternalWorkflowHandle(limiterWorkflowId(workflowInfo().taskQueue)).signal(releasePermitSignal, { requestId }),
    )
      .catch(() => undefined) // No limiter running: nothing is held.
      .finally(() => sending.delete(sent));
    sending.add(sent);
  };

  setHandler(permitGrantedSignal, ({ requestId }) => {
    if (pending?.requestId === requestId) pending.granted = true;
    // A grant that crossed our release: hand it straight back.
    else giveBack(requestId);
  });
  setHandler(permitQueuedSignal, ({ requestId }) => {
    if (pending?.requestId === requestId) pending.held = true;
  });

  /** A wait carried from the run before ends without this run waiting again: the status goes back. */
  const endCarriedWait = (p: Pending): void => {
    const before = p.statusBefore;
    p.statusBefore = undefined;
    if (before === undefined) return;
    ctx.delayed = undefined;
    if (s.status.operationalStatus === 'delayed') s.status.operationalStatus = before;
    s.status.lastUpdated = now();
    ctx.indexForSearch();
    void ctx.writeStatus();
  };

  const release = (): void => {
    const p = pending;
    pending = undefined;
    if (p) endCarriedWait(p);
    if (p && !p.unlimited) giveBack(p.requestId);
  };

  /** Queues the request with the limiter (or, for a place carried over, tells it which run holds it now). */
  const ask = async (p: Pending, state: ProvisioningState): Promise<void> => {
    const { runId, workflowId } = workflowInfo();
    p.announced = true;
    try {
      const { unlimited } = await limiterLocal.requestProvisioningPermit({ requestId: p.requestId, workflowId, runId, state, at: now() });
      if (unlimited) Object.assign(p, { unlimited, granted: true });
    } catch (err) {
      // Cancelled while asking: the request may have reached the limiter.
      if (isCancellation(err)) release();
      throw err;
    }
  };

  const acquire = async (state: ProvisioningState, woken: () => boolean): Promise<{ granted: boolean; delayedSince?: string }> => {
    if (!pending) {
      // Known before it is sent: with a permit free, the grant may arrive before the activity's result.
      pending = { requestId: `${workflowInfo().runId}/${++seq}`, unlimited: false, granted: false, held: false, announced: false };
      await ask(pending, state);
    } else if (!pending.announced) {
      await ask(pending, state);
    }
    const p = pending;
    const carriedBefore = p.statusBefore;
    if (p.granted) {
      endCarriedWait(p);
      return { granted: true, ...(p.delayedSince ? { delayedSince: p.delayedSince } : {}) };
    }
    p.statusBefore = undefined;
    // Search attributes held for the operation's start (context.ts holdIndex) are not held through a wait.
    ctx.flushIndex();
    const before: OperationalStatus = carriedBefore ?? s.status.operationalStatus;
    let shown = false;
    /** The limiter said the limit holds the host: from now on it shows delayed. */
    const showDelayed = async (): Promise<void> => {
      shown = true;
      const since = (p.delayedSince ??= now());
      ctx.delayed = { state, since };
      s.status.operationalStatus = 'delayed';
      s.status.lastUpdated = now();
      ctx.indexForSearch();
      await ctx.writeStatus();
    };
    try {
      // Waiting long while updates arrive grows the history: hand the place to a fresh run.
      for (;;) {
        if (p.held && !shown) await showDelayed();
        await condition(() => p.granted || woken() || ctx.historyTooLong() || (p.held && !shown));
        if (p.granted || woken()) break;
        if (p.held && !shown) continue;
        await ctx.continueAsNewWithState(() => {
          s.permit = {
            requestId: p.requestId,
            state,
            ...(p.delayedSince ? { delayedSince: p.delayedSince } : {}),
            held: p.held,
            granted: p.granted,
            statusBefore: before,
          };
        });
      }
    } catch (err) {
      if (isCancellation(err)) release();
      throw err;
    } finally {
      ctx.delayed = undefined;
      if (s.status.operationalStatus === 'delayed') s.status.operationalStatus = before;
    }
    if (shown) {
      s.status.lastUpdated = now();
      ctx.indexForSearch();
      if (!p.granted) await ctx.writeStatus();
    }
    return { granted: p.granted, ...(p.delayedSince ? { delayedSince: p.delayedSince } : {}) };
  };

  const delivered = async (): Promise<void> => {
    while (sending.size > 0) await Promise.all([...sending]);
  };

  return { acquire, release, undelivered: () => sending.size > 0, delivered };
}

/** The request the run before handed over, still delayed as it was (taken out of the carried state). */
function carriedRequest(ctx: HostContext): Pending | undefined {
  const carried = ctx.s.permit;
  if (!carried) return undefined;
  delete ctx.s.permit;
  const held = carried.held ?? true;
  if (!carried.granted && held && carried.delayedSince) ctx.delayed = { state: carried.state, since: carried.delayedSince };
  const { requestId, granted, delayedSince, statusBefore } = carried;
  return { requestId, unlimited: false, granted, held, ...(delayedSince ? { delayedSince } : {}), announced: false, statusBefore };
}
