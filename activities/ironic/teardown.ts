/**
 * Power changes through Ironic's node (before a delete, after a deploy) and
 * the node's removal: delete (the host is gone) or detach (the node record
 * leaves Ironic, the machine keeps running).
 *
 * These are the destructive calls, so they act only on the host's own node
 * (lookupNode in ironic-node-driver.ts): a node that holds the host's boot
 * MAC without metalflow's ownership mark is an operator's and is never
 * powered off, put in maintenance or deleted. The call then succeeds for
 * the host (its own node is not there) and says what it left alone.
 */
import { CancelledFailure, log } from '@temporalio/activity';
import { activityContext, heartbeat, poller, type PollOptions } from '../common/activity-context';
import { IronicError, type IronicClient } from '../../clients/ironic/client';
import { DELETABLE_STATES, TRANSITIONAL_STATES, type IronicNode } from '../../clients/ironic/types';
import type { NodeState } from '../../clients/ironic/node-watcher';
import { patience } from './back-pressure';
import { changeSeen, judgeMarked, landingOver, lockedOut, ownPowerMarker, powerMarkerOp, unanswered, unansweredFrom } from './power-send';
import { lockWatch } from './node-lock';
import { markerKey } from './sent-marker';
import { AFTER_VERB_REREAD_MS, nodeGone, operationFailed, summary, type NodeDriver, type NodeSummary, type NodeTarget } from './node-driver';

export interface TeardownDeps {
  ironic: IronicClient;
  poll: PollOptions;
  driver: NodeDriver;
}

/** A node never to remove (the host's node at the site it stays at, when two sites share one Ironic). */
interface Spared {
  spare?: string;
}

/** Set when the only node found was not the host's: what was left alone and why. */
export interface Untouched {
  untouched?: string;
}

export function createTeardownActivities(deps: TeardownDeps) {
  const { ironic, poll } = deps;
  const { lookupNode, mustGetNode, waitForChange } = deps.driver;

  /** The host's own node, or why the node found was left alone. */
  async function ownNode(input: NodeTarget, action: string): Promise<{ node?: IronicNode } & Untouched> {
    const found = await lookupNode(input);
    if (!found.foreign) return { node: found.node };
    const untouched = `${found.reason}; not ${action}`;
    if (activityContext()) log.warn(`host ${input.ref.namespace}/${input.ref.name}: ${untouched}`);
    return { untouched };
  }

  async function setPower(input: NodeTarget & { on: boolean }): Promise<NodeSummary & { found: boolean } & Untouched> {
    const { node: found, untouched } = await ownNode(input, input.on ? 'powered on' : 'powered off');
    // A node the host registered that is gone cannot be powered on: the host must register
    // again (it did loop, "powered off" every time). Powering off a node that is gone is done.
    if (!found && input.on && input.nodeId && !untouched) throw nodeGone(input.nodeId);
    if (!found) return { nodeId: '', provisionState: '', poweredOn: false, found: false, ...(untouched ? { untouched } : {}) };
    return { ...(await powerFrom(found, input.on)), found: true };
  }

  /**
   * Brings the node read a moment ago (`found`) to the power target and waits until Ironic reports it. Whether
   * this activity sent the change already travels in the heartbeat details under `key` (another step of the same
   * activity may keep its own record beside it: prepareNode's power-on), and a change that got no answer under
   * `<key>Unanswered`: it is not sent again until a read shows it was not taken (power-send.ts). The change is
   * marked on the node before it is sent, so an attempt whose record died with its worker finds it there.
   */
  async function powerFrom(found: IronicNode, on: boolean, key = 'issued'): Promise<NodeSummary> {
    const target = on ? 'power on' : 'power off';
    const ctx = activityContext();
    const previous = ctx?.info.heartbeatDetails as Record<string, unknown> | undefined;
    let issued = previous?.[key] === true;
    let sentBlind = unansweredFrom(previous?.[`${key}Unanswered`]);
    const details = (): Record<string, unknown> => ({ [key]: issued, ...(sentBlind ? { [`${key}Unanswered`]: sentBlind } : {}) });
    // Ironic's back-pressure (and its NodeLocked 409s) waited out within the attempt (back-pressure.ts); the loop reads the node again after.
    const reads = patience();
    const changes = patience({ locked: true });
    // One that lasts past the limit ends the change naming the lock (node-lock.ts).
    const lock = lockWatch(ironic, found.uuid, poll.lockLimitMs);
    // The lookup's read is the first pass's: the node was read a moment ago. After a wait, the watcher's fields
    // over it: the power state reached needs no whole read; anything else is read again.
    let read: IronicNode | undefined = found;
    const changing = (state: NodeState): boolean => Boolean(state.target_power_state);
    const marker = markerKey();
    // The first read's node: the change an earlier attempt marked on it, without a record of its own, judged there.
    let recalled = issued || sentBlind !== undefined;
    for (;;) {
      if (read && read !== found && read.power_state !== target) read = undefined;
      let node: IronicNode;
      try {
        node = read ?? (await mustGetNode(found.uuid));
      } catch (err) {
        if (await reads.wait(err, details())) continue;
        throw err;
      }
      reads.reset();
      read = undefined;
      if (!recalled) {
        recalled = true;
        const marked = ownPowerMarker(node, marker);
        if (marked?.target === target) {
          const judged = judgeMarked(node, marked);
          if ('taken' in judged) issued = true;
          else sentBlind = judged.unanswered;
          heartbeat(details());
        }
      }
      const seen = changeSeen(node, target);
      if (seen === 'reached') return summary(node);
      if (seen === 'under-way') {
        // Ironic works towards our target: the change this activity sent (answered or not), or one that ends where ours would.
        issued = true;
        sentBlind = undefined;
      }
      if (seen === 'none' && sentBlind) {
        // The change that got no answer may still be queued in Ironic: give it its time to show before sending it again.
        if (!landingOver(sentBlind)) {
          // On the watcher's reads alone: a whole read comes once it sees the node move, or once a minute.
          const state = await waitForChange(node, details(), { working: changing });
          if (state) read = { ...node, ...state };
          continue;
        }
        if (ctx) log.warn(`power ${on ? 'on' : 'off'} of Ironic node ${node.uuid} got no answer and has not shown on the node since; sending it again`);
        sentBlind = undefined;
      }
      if (seen === 'none') {
        if (issued && node.last_error) throw operationFailed(`power ${on ? 'on' : 'off'} failed: ${node.last_error}`);
        // A cancelled (or timed-out, still running) attempt never sends: its retry has the host.
        if (ctx?.cancellationSignal.aborted) throw new CancelledFailure(`the activity was cancelled before it sent ${target}`);
        if (marker) {
          try {
            await ironic.patchNode(node.uuid, [powerMarkerOp({ key: marker, target, lastError: node.last_error ?? null })]);
          } catch (err) {
            // Nothing sent yet: a PATCH that got no answer is written again after the next read.
            if (lockedOut(err)) await lock.locked(err);
            if (unanswered(err) || (await changes.wait(err, details()))) continue;
            throw err;
          }
        }
        try {
          await ironic.setPowerState(node.uuid, target);
          issued = true;
          changes.reset();
          lock.clear();
          heartbeat(details());
          // Not read back at once: the watcher sees the power state (or its target) move from the read before.
          const state = await waitForChange(node, details(), { working: changing, rereadMs: AFTER_VERB_REREAD_MS });
          if (state) read = { ...node, ...state };
          continue;
        } catch (err) {
          if (unanswered(err)) {
            // Taken, queued, or lost: the next reads decide (power-send.ts), never a blind second send.
            sentBlind = { target, at: Date.now() };
            heartbeat(details());
            continue;
          }
          // Refused for now (503), or the node held by another action (409 NodeLocked): wait (bounded), read again.
          if (lockedOut(err)) await lock.locked(err);
          if (await changes.wait(err, details())) continue;
          throw err;
        }
      }
      const state = await waitForChange(node, details(), { working: changing });
      if (state) read = { ...node, ...state };
    }
  }

  async function deleteNode(input: NodeTarget & Spared, how: 'deleted' | 'detached' = 'deleted'): Promise<{ deleted: boolean } & Untouched> {
    const reason = `metalflow: host ${how}`;
    const polling = poller(poll);
    // Ironic's back-pressure waited out within the attempt (back-pressure.ts): every pass looks the node up again,
    // so a delete that got no answer is found done (the node gone) or sent again.
    const reads = patience();
    const changes = patience();
    for (;;) {
      let lookup: { node?: IronicNode } & Untouched;
      try {
        lookup = await ownNode(input, how);
      } catch (err) {
        if (await reads.wait(err)) continue;
        throw err;
      }
      reads.reset();
      const { node, untouched } = lookup;
      if (!node) return { deleted: true, ...(untouched ? { untouched } : {}) };
      if (input.spare === node.uuid) return { deleted: false, untouched: `Ironic node ${node.uuid} is the host's node at the site it stays at; not ${how}` };
      if (!TRANSITIONAL_STATES.has(node.provision_state)) {
        try {
          if (!DELETABLE_STATES.has(node.provision_state) && !node.maintenance) {
            // Ironic refuses to delete from failed states unless the node is in maintenance.
            await ironic.setMaintenance(node.uuid, reason);
          }
          await ironic.deleteNode(node.uuid);
          return { deleted: true };
        } catch (err) {
          if (err instanceof IronicError && err.kind === 'not-found') return { deleted: true };
          if (await changes.wait(err)) continue;
          if (!(err instanceof IronicError && err.kind === 'conflict')) throw err;
        }
      }
      await polling.wait();
    }
  }

  /**
   * Metal3's detach: the node record leaves Ironic as it is. An active node is
   * put in maintenance first (Ironic's way to delete without tearing down), so
   * the machine is neither deprovisioned nor powered off.
   */
  async function detachNode(input: NodeTarget & Spared): Promise<{ deleted: boolean } & Untouched> {
    return deleteNode(input, 'detached');
  }

  /**
   * A move between sites (workflows/host/site-move.ts): the host's node here is put in maintenance with the
   * move's reason before the target site adopts the host, so this Ironic neither powers it nor acts on it
   * (its power sync only reads a node in maintenance) while a second node exists. A node already in
   * maintenance for another reason is left as it is.
   */
  async function holdNode(input: NodeTarget & { reason: string }): Promise<{ held: boolean } & Untouched> {
    const { node, untouched } = await ownNode(input, 'put in maintenance');
    if (!node) return { held: false, ...(untouched ? { untouched } : {}) };
    if (node.maintenance) return { held: node.maintenance_reason === input.reason };
    await ironic.setMaintenance(node.uuid, input.reason);
    return { held: true };
  }

  /** Undoes holdNode (the move was withdrawn): out of maintenance only if the hold is still the move's own. */
  async function releaseNodeHold(input: NodeTarget & { reason: string }): Promise<{ released: boolean } & Untouched> {
    const { node, untouched } = await ownNode(input, 'taken out of maintenance');
    if (!node || !node.maintenance || node.maintenance_reason !== input.reason) return { released: false, ...(untouched ? { untouched } : {}) };
    await ironic.clearMaintenance(node.uuid);
    return { released: true };
  }

  return { setPower, powerFrom, deleteNode, detachNode, holdNode, releaseNodeHold };
}
