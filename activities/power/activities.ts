/**
 * Power reads and changes on the path that owns the host's power: Ironic when
 * it manages the node, the BMC itself otherwise (spec.provisioner direct, or
 * no Ironic node), so the two never fight over a host.
 *
 * Ironic changes are level-triggered like drive(): the power targets already
 * sent are carried in heartbeat details, each target (and a reboot's step) is
 * marked on the node before it is sent, and a change that got no answer, or
 * whose record died with its worker, is judged by the node before it is sent
 * again (activities/ironic/power-send.ts), so a retried attempt never sends a
 * second reboot nor a change Ironic still holds in its queue. A soft power off / soft reboot that Ironic refuses (the
 * driver cannot) or that fails within its timeout is followed by a hard one,
 * as Metal3 does.
 */
import { ApplicationFailure, CancelledFailure, log } from '@temporalio/activity';
import { FAILURE } from '../../model/failures';
import type { HostRef, HostSpec } from '../../model/host';
import { activityContext, heartbeat, poller, DEFAULT_POLL, type PollOptions } from '../common/activity-context';
import { IronicError, type IronicClient, type IronicPowerTarget } from '../../clients/ironic/client';
import { POWER_FIELDS, type IronicNode } from '../../clients/ironic/types';
import type { BmcActivities } from '../bmc/activities';
import { markerKey, markerOp, ownMarker, provisionMoment } from '../ironic/sent-marker';
import { nodeGone, translate } from '../ironic/node-driver';
import { patience } from '../ironic/back-pressure';
import { lockWatch } from '../ironic/node-lock';
import { changeSeen, isReboot, judgeMarked, landingOver, lockedOut, ownPowerMarker, powerMarkerOp, unanswered, unansweredFrom } from '../ironic/power-send';

export type PowerPath = 'ironic' | 'bmc';

export type PowerMode = 'soft' | 'hard';

export interface PowerActivityDeps {
  ironic: IronicClient;
  bmc: Pick<BmcActivities, 'getBmcPower'>;
  poll?: PollOptions;
}

export interface ReadPowerInput {
  ref: HostRef;
  /** References only; the BMC password is read by the BMC activity at the moment of use. */
  spec: HostSpec;
  nodeId?: string;
  via: PowerPath;
}

export interface NodePowerInput {
  ref: HostRef;
  nodeId: string;
  /** `reboot` ends powered on (a host that is off is only powered on). */
  action: 'on' | 'off' | 'reboot';
  mode?: PowerMode;
  /** Bound of a soft power off / soft reboot before the hard one. */
  softTimeoutSeconds: number;
  /** Reboot with Ironic's `rebooting` targets, never through off (spec.disablePowerOff). */
  inPlace?: boolean;
}

const failed = (message: string): ApplicationFailure => ApplicationFailure.nonRetryable(message, FAILURE.operationFailed);

export function createPowerActivities(deps: PowerActivityDeps) {
  const { ironic } = deps;
  const poll = deps.poll ?? DEFAULT_POLL;

  /**
   * The host's real power state, from whoever owns it. `undefined` when it cannot be
   * told (no node, or Ironic has not read the BMC yet); a BMC that cannot be reached fails.
   * `nodeGone`: Ironic no longer has the node the host registered (its database was
   * emptied, or the node deleted): the host registers again.
   */
  async function readHostPower(input: ReadPowerInput): Promise<{ poweredOn?: boolean; nodeGone?: true }> {
    if (input.via === 'bmc') return { poweredOn: (await deps.bmc.getBmcPower({ ref: input.ref, spec: input.spec })).poweredOn };
    if (!input.nodeId) return {};
    try {
      const node = await ironic.getNodeState(input.nodeId, [...POWER_FIELDS]);
      if (!node) return { nodeGone: true };
      if (node.target_power_state) return {};
      if (node.power_state === 'power on') return { poweredOn: true };
      if (node.power_state === 'power off') return { poweredOn: false };
      return {};
    } catch (err) {
      return translate(err);
    }
  }

  async function mustGet(nodeId: string): Promise<IronicNode> {
    const node = await ironic.getNode(nodeId);
    if (!node) throw nodeGone(nodeId);
    return node;
  }

  /**
   * Power on, off (soft first when asked) or reboot an Ironic node through Ironic's power
   * targets (`soft power off`, `power off`, `soft rebooting`, `rebooting`, `power on`).
   * Each target is sent once: one that got no answer is judged by the node before it is sent
   * again, and a 409 from a change under way to the same state is that change taken
   * (activities/ironic/power-send.ts).
   */
  async function changeNodePower(input: NodePowerInput): Promise<{ poweredOn: boolean; sent: string[] }> {
    const ctx = activityContext();
    const previous = ctx?.info.heartbeatDetails as { sent?: string[]; unanswered?: unknown } | undefined;
    const sent = [...(previous?.sent ?? [])];
    /** The target last sent whose answer never came, until a read shows it taken or its time to show is over. */
    let sentBlind = unansweredFrom(previous?.unanswered);
    const details = () => (sentBlind ? { sent, unanswered: sentBlind } : { sent });
    const polling = poller(poll);
    // Ironic's NodeLocked 409 from a change that is not ours, waited out within the attempt (bounded, heartbeating).
    const locks = patience({ locked: true });
    // One that lasts past the limit ends the change naming the lock (activities/ironic/node-lock.ts).
    const lock = lockWatch(ironic, input.nodeId, poll.lockLimitMs);
    // A reboot is a power off, then on (as Metal3 does it): each step shows on the node, so
    // with the step marked on the node before it is sent, a retry after a crash can tell
    // "not off yet" from "off and on again" on a node that is on. Ironic's own `rebooting`
    // leaves nothing to tell them apart: with disablePowerOff (the host must never be seen
    // off) it is marked too, and a marked in-place reboot is never sent again.
    const inPlace = input.action === 'reboot' && input.inPlace === true;
    const soft: IronicPowerTarget = inPlace ? 'soft rebooting' : 'soft power off';
    const hard: IronicPowerTarget = inPlace ? 'rebooting' : 'power off';
    const key = markerKey();
    const phase = (node: IronicNode): string | undefined => {
      const marked = ownMarker(node, key)?.verb;
      if (marked) return marked;
      if (sent.includes('power on')) return 'reboot-on';
      return sent.some((t) => t === soft || t === hard) ? 'reboot-off' : undefined;
    };
    const accepted = (target: IronicPowerTarget): void => {
      lock.clear();
      sent.push(target);
      sentBlind = undefined;
      heartbeat(details());
      polling.reset();
    };
    /**
     * Sends `target` from the node just read, the power marker (and a reboot's step, `verb`) written on the node
     * first in one PATCH: an attempt after this one's worker died finds what it was about to send.
     */
    const send = async (target: IronicPowerTarget, node: IronicNode, verb?: string): Promise<void> => {
      // A cancelled attempt (or one the server timed out, still running) never sends: its retry has the host.
      if (ctx?.cancellationSignal.aborted) throw new CancelledFailure(`the activity was cancelled before it sent ${target}`);
      if (key) {
        const ops = [powerMarkerOp({ key, target, lastError: node.last_error ?? null })];
        if (verb && ownMarker(node, key)?.verb !== verb) ops.push(markerOp({ key, verb, before: provisionMoment(node) }));
        try {
          await ironic.patchNode(input.nodeId, ops);
        } catch (err) {
          // Nothing sent yet: a PATCH that got no answer is written again after the next read, a locked node waited out.
          if (lockedOut(err)) await lock.locked(err);
          if (unanswered(err) || (await locks.wait(err, details()))) return;
          throw err;
        }
      }
      try {
        await ironic.setPowerState(input.nodeId, target, target.startsWith('soft') ? input.softTimeoutSeconds : undefined);
        locks.reset();
        accepted(target);
      } catch (err) {
        if (unanswered(err)) {
          // Taken, queued in Ironic, or lost: counted as sent until a read shows which (the loop below).
          sent.push(target);
          sentBlind = { target, at: Date.now() };
          heartbeat(details());
          return;
        }
        if (lockedOut(err)) {
          // Held by a change under way: ours when it ends where ours would (sent before and its answer lost, or by
          // an attempt whose record died with its worker); anything else is waited out, then the node read again.
          const state = await ironic.getNodeState(input.nodeId, [...POWER_FIELDS]);
          if (state && changeSeen(state, target) === 'under-way') return accepted(target);
          await lock.locked(err);
          if (await locks.wait(err, details())) return;
          throw err;
        }
        // A soft target the driver cannot do is answered 400: go hard, as Metal3 does. Any other refusal (a 409 for
        // the node's state or disable_power_off: clients/ironic/errors.ts) is final and named by Ironic's message.
        if (target === soft && err instanceof IronicError && err.kind === 'rejected' && err.status === 400) {
          sent.push(`${soft} refused`);
          heartbeat(details());
          return send(hard, node, verb);
        }
        throw err;
      }
    };
    /** A target sent whose answer never came, judged by the node just read: taken, still to wait for, or lost (sent again). */
    const judgeBlind = (node: IronicNode): void => {
      if (!sentBlind) return;
      const seen = changeSeen(node, sentBlind.target);
      // A reboot cannot be told from the node once it is over: sent at most once (docs/reliability.md).
      if (seen === 'reached' || seen === 'under-way' || isReboot(sentBlind.target)) {
        sentBlind = undefined;
        heartbeat(details());
        return;
      }
      if (seen !== 'none' || !landingOver(sentBlind)) return;
      log.warn(`${sentBlind.target} of Ironic node ${input.nodeId} got no answer and has not shown on the node since; sending it again`);
      const at = sent.lastIndexOf(sentBlind.target);
      if (at >= 0) sent.splice(at, 1);
      sentBlind = undefined;
      heartbeat(details());
    };
    /**
     * At the attempt's first read: the target an earlier attempt marked on the node and left no record of (its
     * worker died between the PATCH and the heartbeat that would have said), judged as a change that got no answer.
     */
    const recall = (node: IronicNode): void => {
      const marked = ownPowerMarker(node, key);
      if (!marked || sent.includes(marked.target)) return;
      sent.push(marked.target);
      const judged = judgeMarked(node, marked);
      if ('unanswered' in judged) sentBlind = judged.unanswered;
      heartbeat(details());
    };
    let first = true;
    try {
      for (;;) {
        const node = await mustGet(input.nodeId);
        if (first) {
          first = false;
          recall(node);
        }
        judgeBlind(node);
        if (!node.target_power_state) {
          const on = node.power_state === 'power on';
          const lastSent = sent.filter((t) => !t.endsWith('refused')).at(-1);
          // While a change that got no answer may still land, an old last_error is not its failure.
          if (lastSent && node.last_error && !sentBlind) {
            if (lastSent !== soft) throw failed(`${lastSent} failed: ${node.last_error}`);
            await send(hard, node); // soft did not finish within its timeout
            continue;
          }
          if (input.action === 'on') {
            if (on) return { poweredOn: true, sent };
            if (!sent.includes('power on')) await send('power on', node);
          } else if (input.action === 'off') {
            if (node.power_state === 'power off') return { poweredOn: false, sent };
            if (!lastSent) await send(input.mode === 'soft' ? soft : hard, node);
          } else if (inPlace) {
            // Rebooted: this activity sent it, or marked it on the node (a retry whose record died with its worker).
            if (on && (lastSent || phase(node) === 'reboot-in-place')) return { poweredOn: true, sent };
            if (!on) {
              if (!sent.includes('power on')) await send('power on', node);
            } else {
              await send(input.mode === 'hard' ? hard : soft, node, 'reboot-in-place');
            }
          } else if (on) {
            // Reboot: done once it was on again after the off; a host that was off is only powered on.
            if (phase(node) === 'reboot-on') return { poweredOn: true, sent };
            if (!lastSent) await send(input.mode === 'hard' ? hard : soft, node, 'reboot-off');
          } else if (!sent.includes('power on')) {
            await send('power on', node, 'reboot-on');
          }
        }
        await polling.wait(details());
      }
    } catch (err) {
      return translate(err);
    }
  }

  /**
   * Nothing: the idle wait's fence (idle-wait.ts). A local activity
   * records no event when scheduled and its result waits for a real workflow task, so
   * what the wait does after a fire lands in the task that carries the fire.
   */
  async function idleFence(): Promise<void> {}

  return { readHostPower, changeNodePower, idleFence };
}

export type PowerActivities = ReturnType<typeof createPowerActivities>;
