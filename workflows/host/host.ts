/**
 * One long-lived workflow per host: the host's single owner. It takes the
 * desired spec through a validated update (host-handlers.ts), decides with
 * `decide()`, and runs each operation itself, one at a time
 * (host-operation.ts). It records failures in the host's status and retries
 * them after a visible, bounded backoff, and hands its state to a fresh run
 * before its history grows too long (host-context.ts).
 */
import { condition, allHandlersFinished, log, patched } from '@temporalio/workflow';
import { countRunInput } from '../common/history-count';
import { IdleWait } from './idle-wait';
import { emptyStatus } from '../../model/host';
import { DEFAULT_HOST_OPTIONS, type HostState, type HostView, type HostWorkflowInput } from '../../contracts/host';
import { decide } from './decide';
import { idleFence, powerCheckDelayMs, powerCheckIsLocal, readPower } from './rules/power-check';
import { hostContext, now, type HostContext } from './context';
import { setHostHandlers } from './handlers';
import { beginOperation, enterState, recordFailure, settingsHeldEvent } from './decision-records';
import { operationRunner } from './operation';
import { markNodeLost } from './rules/node-lost';
import { recordHostUid } from './uid';
import { imageToDeploy } from './rules/image-check';
import { permitKeeper } from './rules/permit';
import { dhcpDue, LeaseWatch, releaseDhcpOnDelete, syncDhcp } from './dhcp';

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
    await ctx.writeStatus(markNodeLost(s, `the power check found no Ironic node ${s.status.provisioning.ID}`, now()));
    return;
  }
  if (observed === undefined || observed === s.status.poweredOn) return;
  const at = now();
  s.power = { ...(s.power ?? { holds: {}, seq: 0 }), lastMismatch: { at, observedOn: observed, recordedOn: s.status.poweredOn } };
  s.status.poweredOn = observed;
  s.status.lastUpdated = at;
  const message = `the host was found powered ${observed ? 'on' : 'off'} (recorded ${observed ? 'off' : 'on'}, spec.online ${String(s.spec?.online)})`;
  log.warn(message);
  await ctx.writeStatus({ type: 'Warning', reason: 'PowerStateMismatch', message });
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

export async function hostWorkflow(input: HostWorkflowInput): Promise<HostView> {
  countRunInput(input);
  const s: HostState = input.state ?? initialState(input);
  const ctx = hostContext(s);
  const { historyTooLong, continueAsNewWithState } = ctx;
  // The first search attributes (a spec that came with the start is indexed by its handler, run from
  // setHostHandlers) go with the first operation's, when one starts in this task; flushed below otherwise.
  // patch since v0.2.0
  if (patched('lifecycle-events')) ctx.holdIndex();
  setHostHandlers(ctx);
  const { runOperation, waitForRetry, backoff } = operationRunner(ctx);
  const permits = permitKeeper(ctx);
  /** A release sent in this run reaches the limiter before the run closes (host-permit.ts). */
  const releasesDelivered = async (): Promise<void> => {
    if (permits.undelivered()) await permits.delivered();
  };
  ctx.beforeHandOver = releasesDelivered;
  recordHostUid(s);

  ctx.indexForSearch();
  const idle = new IdleWait(ctx);
  const leases = new LeaseWatch(ctx);
  // A run continued from a backoff waits out what was left of it before retrying.
  if (s.retryAt !== undefined) {
    ctx.flushIndex();
    await waitForRetry();
  }
  for (;;) {
    // Events from the shim's updates, with the status they changed.
    for (const event of ctx.pendingEvents.splice(0)) await ctx.writeStatus(event);
    // The boot MAC's reservation before anything boots it (dhcp.ts; only for a host with spec.dhcp).
    if (dhcpDue(s)) {
      ctx.flushIndex();
      if ((await syncDhcp(ctx, backoff)) === 'again') continue;
    }
    let decision = decide(s);
    // Records that change what decide() sees: made, then decided again. No await unless there is
    // something to tell: an await lets handlers run before the next decision.
    while (decision.kind === 'settle' || decision.kind === 'tell') {
      if (decision.kind === 'settle') s.power = decision.power;
      else {
        const told = settingsHeldEvent(s, decision.held);
        if (told) await ctx.writeStatus(told);
      }
      decision = decide(s);
    }
    // Search attributes held since an operation ended (or the run began) are upserted before anything but an
    // operation that starts now, whose own upsert carries them (one event where there were two or three).
    if (decision.kind !== 'operation') ctx.flushIndex();
    // A place in the provisioning queue is kept only for the operation that asked for it.
    if (!(decision.kind === 'operation' && decision.permit)) permits.release();
    if (decision.kind === 'pause') {
      if (historyTooLong()) await continueAsNewWithState();
      const nudged = ctx.nudges;
      await condition(() => !s.paused || ctx.nudges !== nudged || historyTooLong());
      continue;
    }
    if (decision.kind === 'finish') break;
    if (decision.kind === 'fail') {
      await ctx.writeStatus(recordFailure(s, decision.errorType, decision.message));
      continue;
    }
    if (decision.kind === 'enter') {
      const entered = enterState(ctx, decision.state);
      if (entered) await ctx.writeStatus(entered);
      continue;
    }
    if (decision.kind === 'operation') {
      idle.leave();
      leases.stop();
      // Checked while the host still shows where it was: a bad image leaves it there (image-check.ts).
      if (decision.op === 'provision') ctx.flushIndex();
      const deploy = decision.op === 'provision' ? await imageToDeploy(ctx, backoff) : undefined;
      if (deploy === 'again') continue;
      let permit: { granted: boolean; delayedSince?: string } | undefined;
      if (decision.permit) {
        permit = await permits.acquire(decision.state, changeSeen(ctx));
        if (!permit.granted) continue;
      }
      // The state entered is upserted with the operation's start (runOperation flushes), not on its own.
      // patch since v0.2.0
      if (patched('lifecycle-events')) ctx.holdIndex();
      const gaveUp = beginOperation(s, decision);
      if (gaveUp) await ctx.writeStatus(gaveUp);
      const entered = enterState(ctx, decision.state);
      if (entered) await ctx.writeStatus(entered);
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
    if (historyTooLong()) {
      leases.stop();
      await continueAsNewWithState();
    }
    const checkMs = powerCheckDelayMs(s);
    if (s.powerCheckAsked) {
      // The power sentinel saw the node change.
      s.powerCheckAsked = false;
      if (checkMs !== undefined) {
        await checkPowerNow(ctx);
        continue;
      }
    }
    // A changed DHCP lease the watch returned goes into status.dhcp first (host-dhcp.ts).
    if (leases.arrived()) {
      await leases.apply(idleFence);
      continue;
    }
    leases.ensure();
    const seen = changeSeen(ctx);
    const changed = () => seen() || s.powerCheckAsked === true || leases.arrived();
    await idle.wait(changed, { powerMs: checkMs, checkPower: () => checkPower(ctx), powerCheckIsLocal: () => powerCheckIsLocal(s), fence: idleFence });
  }
  ctx.flushIndex();
  if (s.dhcp) await releaseDhcpOnDelete(s);
  await condition(allHandlersFinished);
  await releasesDelivered();
  return ctx.view();
}
