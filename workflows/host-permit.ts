/**
 * The host's side of the provisioning limit (patch provisioning-limit, README
 * "Provisioning limit"): before inspecting, provisioning or deprovisioning, a
 * host asks its task queue's limiter for a permit and waits, in the state it
 * is in with `operationalStatus: delayed`, until the limiter's signal says go.
 * The permit goes back when the operation ends (however it ends); a place in
 * the queue goes back when the host no longer wants it (paused, deleted, a
 * new decision) or its run is cancelled.
 */
import {
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { parseBmcAddress } from '../types/bmc';
import type { HostSpec, OperationalStatus, ProvisioningState } from '../types/host';
import type { LimiterActivities } from '../activities/limiter-activities';
import type { OperationKind } from './definitions';
import { QUIET_RETRY } from './operation-common';
import { isDirect } from './direct-operations';
import { limiterWorkflowId, permitGrantedSignal, releasePermitSignal } from './limiter-definitions';
import { now, type HostContext } from './host-context';

const limiter = proxyActivities<LimiterActivities>({ startToCloseTimeout: '1 minute', retry: QUIET_RETRY });

/**
 * The operations Metal3 counts (BMO gates the moves into inspecting, provisioning and
 * deprovisioning), except where no network boot is involved, as BMO exempts virtual
 * media: a virtual-media BMC, the direct provisioner, inspection read from the BMC.
 */
export function needsPermit(op: OperationKind, spec: HostSpec | undefined): boolean {
  if (op !== 'inspect' && op !== 'provision' && op !== 'deprovision') return false;
  if (isDirect(spec) || (op === 'inspect' && spec?.inspectionMode === 'fast')) return false;
  const bmc = spec?.bmc ? parseBmcAddress(spec.bmc.address) : undefined;
  return !(bmc?.ok && bmc.value.type.endsWith('-virtualmedia'));
}

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
}

export function permitKeeper(ctx: HostContext): PermitKeeper {
  const { s } = ctx;
  let pending: { requestId: string; unlimited: boolean; granted: boolean; delayedSince?: string } | undefined;
  let seq = 0;

  const giveBack = (requestId: string): void => {
    // Also from a cancelled run: the release is what frees the permit for the next host.
    CancellationScope.nonCancellable(() =>
      getExternalWorkflowHandle(limiterWorkflowId(workflowInfo().taskQueue)).signal(releasePermitSignal, { requestId }),
    ).catch(() => undefined); // No limiter running: nothing is held.
  };

  setHandler(permitGrantedSignal, ({ requestId }) => {
    if (pending?.requestId === requestId) pending.granted = true;
    // A grant that crossed our release: hand it straight back.
    else giveBack(requestId);
  });

  const release = (): void => {
    const p = pending;
    pending = undefined;
    if (p && !p.unlimited) giveBack(p.requestId);
  };

  const acquire = async (state: ProvisioningState, woken: () => boolean): Promise<{ granted: boolean; delayedSince?: string }> => {
    if (!pending) {
      const { runId, workflowId } = workflowInfo();
      const requestId = `${runId}/${++seq}`;
      // Known before it is sent: with a permit free, the grant may arrive before the activity's result.
      const asked = { requestId, unlimited: false, granted: false };
      pending = asked;
      try {
        const { unlimited } = await limiter.requestProvisioningPermit({ requestId, workflowId, runId, state, at: now() });
        if (unlimited) Object.assign(asked, { unlimited, granted: true });
      } catch (err) {
        // Cancelled while asking: the request may have reached the limiter.
        if (isCancellation(err)) release();
        throw err;
      }
    }
    const p = pending;
    if (p.granted) return { granted: true, ...(p.delayedSince ? { delayedSince: p.delayedSince } : {}) };
    p.delayedSince ??= now();
    const before: OperationalStatus = s.status.operationalStatus;
    ctx.delayed = { state, since: p.delayedSince };
    s.status.operationalStatus = 'delayed';
    s.status.lastUpdated = now();
    ctx.publish();
    await ctx.sync();
    try {
      await condition(() => p.granted || woken());
    } catch (err) {
      if (isCancellation(err)) release();
      throw err;
    } finally {
      ctx.delayed = undefined;
      if (s.status.operationalStatus === 'delayed') s.status.operationalStatus = before;
    }
    s.status.lastUpdated = now();
    ctx.publish();
    if (!p.granted) await ctx.sync();
    return { granted: p.granted, delayedSince: p.delayedSince };
  };

  return { acquire, release };
}
