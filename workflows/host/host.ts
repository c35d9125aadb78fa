/**
 * One long-lived workflow per host: the host's single owner. It takes the
 * desired spec through a validated update (host-handlers.ts), decides with
 * `decide()`, and runs each operation itself, one at a time
 * (host-operation.ts). It records failures in the host's status and retries
 * them after a visible, bounded backoff, and hands its state to a fresh run
 * before its history grows too long (host-context.ts).
 */
import { condition, allHandlersFinished, log } from '@temporalio/workflow';
import { countRunInput } from '../common/history-count';
import { IdleWait } from './idle-wait';
import { emptyStatus } from '../../model/host';
import { DEFAULT_HOST_OPTIONS, type HostState, type HostView, type HostWorkflowInput } from '../../contracts/host';
import { decide, deleteGiveUp, metal3Transition, offlineHoldsProvisioning } from './decide';
import { offlinePowerStep, settlePowerRequests } from './rules/power-requests';
import { idleFence, powerCheckDelayMs, powerCheckIsLocal, readPower } from './rules/power-check';
import { hostContext, now, type HostContext } from './context';
import { setHostHandlers } from './handlers';
import { operationRunner } from './operation';
import { markNodeLost } from './rules/node-lost';
import { recordHostUid } from './uid';
import { imageToDeploy } from './rules/image-check';
import { permitKeeper } from './rules/permit';
import { provisioningRetriesApply, recordAttempt } from './rules/provisioning-retries';
import { customDeployChanged } from './rules/custom-deploy-change';
import { disablePowerOffStale } from './rules/disable-power-off';
import { settingsHeld } from './rules/servicing';
import type { HostEvent } from '../../model/host-event';
import { dhcpTracked, leaseCheckDelayMs, leasePeriodMs, readLease, releaseDhcpOnDelete, syncDhcp } from './dhcp';

function initialState(input: HostWorkflowInput): HostState {
  return {
    ref: input.ref,
    ...(input.uid ? { uid: input.uid } : {}),
    generation: 0,
    status: emptyStatus(),
    deleteRequested: false,
    opSeq: 0,
    operations: [],
    options: { ...DEFAULT_HOST_OPTIONS, ...input.options },
  };
}

/** Periodic check: a host whose power differs from its status (changed behind our back) is recorded and corrected. */
async function checkPower(ctx: HostContext): Promise<void> {
  const { s } = ctx;
  const { poweredOn: observed, nodeGone } = await readPower(s);
  if (nodeGone) {
    // The next decision registers the host again (node-lost.ts).
    await ctx.sync(markNodeLost(s, `the power check found no Ironic node ${s.status.provisioning.ID}`, now()));
    return;
  }
  if (observed === undefined || observed === s.status.poweredOn) return;
  const at = now();
  s.power = { ...(s.power ?? { holds: {}, seq: 0 }), lastMismatch: { at, observedOn: observed, recordedOn: s.status.poweredOn } };
  s.status.poweredOn = observed;
  s.status.lastUpdated = at;
  const message = `the host was found powered ${observed ? 'on' : 'off'} (recorded ${observed ? 'off' : 'on'}, spec.online ${String(s.spec?.online)})`;
  log.warn(message);
  await ctx.sync({ type: 'Warning', reason: 'PowerStateMismatch', message });
}

/**
 * A check asked by the power sentinel's signal: a local activity first (the idle
 * wait's fence, idle-wait.ts), so whatever the signal's task brings is ordered
 * the same live and on replay.
 */
async function checkPowerNow(ctx: HostContext): Promise<void> {
  if (!powerCheckIsLocal(ctx.s)) await idleFence();
  await checkPower(ctx);
}

/** From now on: has anything arrived that may change the decision (a spec, a delete, a power request, a directive)? */
function changeSeen(ctx: HostContext): () => boolean {
  const { s } = ctx;
  const generation = s.generation;
  const deleteRequested = s.deleteRequested;
  const powerSeq = s.power?.seq;
  const nudged = ctx.nudges;
  return () => s.generation !== generation || s.deleteRequested !== deleteRequested || s.power?.seq !== powerSeq || ctx.nudges !== nudged;
}

/**
 * Why a changed spec.raid / spec.firmware waits, told once per reason as an Event:
 * Kubernetes mode shows it there, the API view as `settingsHeld`.
 */
function settingsHeldEvent(s: HostState): HostEvent | undefined {
  const held = settingsHeld(s);
  if (held === undefined) delete s.heldTold;
  else if (held !== s.heldTold) {
    s.heldTold = held;
    return { type: 'Normal', reason: 'SettingsHeld', message: held };
  }
  return undefined;
}

export async function hostWorkflow(input: HostWorkflowInput): Promise<HostView> {
  countRunInput(input);
  const s: HostState = input.state ?? initialState(input);
  const ctx = hostContext(s);
  const { historyTooLong, continueAsNewWithState } = ctx;
  setHostHandlers(ctx);
  const { runOperation, waitForRetry, backoff } = operationRunner(ctx);
  const permits = permitKeeper(ctx);
  /** A release sent in this run reaches the limiter before the run closes (host-permit.ts). */
  const releasesDelivered = async (): Promise<void> => {
    if (permits.undelivered()) await permits.delivered();
  };
  ctx.beforeHandOver = releasesDelivered;
  recordHostUid(s);

  ctx.publish();
  const idle = new IdleWait(ctx);
  // A run continued from a backoff waits out what was left of it before retrying.
  if (s.retryAt !== undefined) await waitForRetry();
  for (;;) {
    // Events from the shim's updates, with the status they changed.
    for (const event of ctx.pendingEvents.splice(0)) await ctx.sync(event);
    if (s.paused) {
      // Paused: nothing touches the hardware, deletion included (as in Metal3), until unpaused.
      // A place in the provisioning queue goes to the next host.
      permits.release();
      if (historyTooLong()) await continueAsNewWithState();
      const nudged = ctx.nudges;
      await condition(() => !s.paused || ctx.nudges !== nudged || historyTooLong());
      continue;
    }
    // The boot MAC's reservation before anything boots it (host-dhcp.ts; only for a host with spec.dhcp).
    if (dhcpTracked(s) && (await syncDhcp(ctx, backoff)) === 'again') continue;
    s.power = settlePowerRequests(s.status.poweredOn, s.spec, s.power);
    // A failed deploy deprovisions and is counted, up to BMO's retry limit (provisioning-retries.ts).
    const retries = provisioningRetriesApply(s);
    // No await unless there is something to tell: an await lets handlers run before decide().
    const held = settingsHeldEvent(s);
    if (held) await ctx.sync(held);
    const decision = decide(s, {
      giveUp: deleteGiveUp(s) !== undefined,
      metal3: metal3Transition(s) !== undefined,
      retries,
      customDeploy: customDeployChanged(s),
      powerOffFlag: disablePowerOffStale(s),
      online: offlineHoldsProvisioning(s),
    });
    if (decision.kind === 'operation' && decision.op === 'power') {
      // As Metal3: spec.online false is a soft power off, hard only after a failure.
      const offline = offlinePowerStep(decision.power, s.status.errorCount);
      if (offline) decision.power = offline;
    }
    const gated = decision.kind === 'operation' && ctx.provisioner().needsPermit(decision.op, s.spec);
    if (!gated) permits.release();
    if (decision.kind === 'finish') break;
    if (decision.kind === 'fail') {
      // The provisioning retry limit (provisioning-retries.ts): recorded as BMO's recordActionFailure does.
      Object.assign(s.status, { errorType: decision.errorType, errorMessage: decision.message, operationalStatus: 'error', lastUpdated: now() });
      s.status.errorCount += 1;
      await ctx.sync({ type: 'Warning', reason: 'ProvisioningError', message: decision.message });
      continue;
    }
    if (decision.kind === 'enter') {
      const before = s.status.provisioning.state;
      ctx.setState(decision.state);
      await ctx.sync({ type: 'Normal', reason: 'StateChanged', message: `provisioning state ${before || 'none'} → ${decision.state}` });
      continue;
    }
    if (decision.kind === 'operation') {
      idle.leave();
      // Checked while the host still shows where it was: a bad image leaves it there (image-check.ts).
      const deploy = decision.op === 'provision' ? await imageToDeploy(ctx, backoff) : undefined;
      if (deploy === 'again') continue;
      let permit: { granted: boolean; delayedSince?: string } | undefined;
      if (gated) {
        // At most METALFLOW_PROVISIONING_LIMIT hosts inspect, provision or deprovision at once (host-permit.ts).
        permit = await permits.acquire(decision.state, changeSeen(ctx));
        if (!permit.granted) continue;
      }
      if (decision.recordImage) s.status.provisioning.image = decision.recordImage;
      if (decision.failedDeploy) s.status.provisioningFailCount = (s.status.provisioningFailCount ?? 0) + 1;
      if (retries && decision.op === 'provision' && s.status.provisioning.state === 'available') recordAttempt(s);
      if (decision.gaveUp) {
        log.warn(decision.gaveUp.message);
        await ctx.sync({ type: 'Warning', reason: decision.gaveUp.reason, message: decision.gaveUp.message });
      }
      const before = s.status.provisioning.state;
      ctx.setState(decision.state);
      if (before !== decision.state) {
        // A new host has no state yet; "unmanaged" is a state of its own (a host without a BMC).
        const from = before || 'none';
        await ctx.sync({ type: 'Normal', reason: 'StateChanged', message: `provisioning state ${from} → ${decision.state}` });
      }
      const succeeded = await runOperation(decision.op, decision.state, {
        adopt: decision.adopt,
        power: decision.power,
        ...(deploy ? { image: deploy.image, ...(deploy.verified ? { imageVerified: true as const } : {}) } : {}),
        ...(permit ? { release: permits.release, ...(permit.delayedSince ? { delayedSince: permit.delayedSince } : {}) } : {}),
      });
      if (decision.op === 'delete' && succeeded) break;
      continue;
    }
    // Idle: the only time it is safe to hand our state to a fresh run.
    if (historyTooLong()) await continueAsNewWithState();
    const checkMs = powerCheckDelayMs(s);
    if (s.powerCheckAsked) {
      // The power sentinel saw the node change.
      s.powerCheckAsked = false;
      if (checkMs !== undefined) {
        await checkPowerNow(ctx);
        continue;
      }
    }
    const seen = changeSeen(ctx);
    const changed = () => seen() || s.powerCheckAsked === true;
    // The first lease read is due as soon as the reservation is written; later ones follow the fires.
    if (leaseCheckDelayMs(s) !== undefined && !s.dhcp?.leaseCheckedAt) await readLease(ctx);
    else await idle.wait(changed, { powerMs: checkMs, leaseMs: leasePeriodMs(s), checkPower: () => checkPower(ctx), readLease: () => readLease(ctx), powerCheckIsLocal: () => powerCheckIsLocal(s), fence: idleFence });
  }
  if (s.dhcp) await releaseDhcpOnDelete(s);
  await condition(allHandlersFinished);
  await releasesDelivered();
  return ctx.view();
}
