/**
 * The loop every Ironic activity is built on. Each activity is
 * level-triggered: it re-reads the node, works out the next request from
 * whatever state Ironic reports, and loops until the goal state. A retry after
 * a crash therefore continues where the last attempt left off instead of
 * repeating it: the verbs already sent are carried in heartbeat details (and
 * in the node's sent marker), so a failure Ironic reports for them is
 * reported, not re-tried behind the workflow's back.
 */
import { ApplicationFailure, CancelledFailure } from '@temporalio/activity';
import { FAILURE } from '../../model/failures';
import type { HostRef } from '../../model/host';
import { ironicNodeName } from '../../model/host-ref';
import { activityContext, heartbeat, keepAlive, poller, type PollOptions } from '../common/activity-context';
import { announcedVerbSent, markerKey, markerOp, ownMarker, provisionMoment, type ThenVerb } from './sent-marker';
import { patience } from './back-pressure';
import { lockWatch } from './node-lock';
import { noFreeWorker, transientIronicError } from './transient';
import { IronicError, type IronicClient, type JsonPatchOp } from '../../clients/ironic/client';
import { nodeGoneMessage } from '../../clients/ironic/errors';
import { toFailure } from '../common/failures';
import { TRANSITIONAL_STATES, type IronicNode } from '../../clients/ironic/types';
import type { NodeState, NodeWatcher } from '../../clients/ironic/node-watcher';

/** Heartbeat at least this often while a node is unchanged (the SDK throttles what it sends). */
const WAIT_SLICE_MS = 5000;
/** Re-read the whole node at least this often even when the watcher saw no change. */
const REREAD_MS = 60_000;
/**
 * After a verb the node is not read back at once: the watcher sees it move (its provision_updated_at at least).
 * Should Ironic have taken the verb and moved nothing the watcher reads, the node is read whole after this, once a
 * read of the watcher made since the verb found it unmoved (on a busy Ironic one read can wait longer than this in
 * Ironic's API queue: a whole-node GET of every waiter then would only queue behind it).
 */
export const AFTER_VERB_REREAD_MS = 5_000;

/**
 * Verbs sent without a sent marker: `manage` only checks the BMC and moves the node to manageable, so sent a second
 * time after a worker died it checks again and harms nothing. One PATCH fewer per registration.
 */
const UNMARKED_VERBS: ReadonlySet<string> = new Set(['manage']);

export interface NodeTarget {
  ref: HostRef;
  nodeId?: string;
  bootMACAddress?: string;
}

/** metalflow's ownership mark on a node it registered: `extra.metalflow_host` = `<namespace>/<name>`. */
export const OWNER_KEY = 'metalflow_host';
export const ownerMark = (ref: HostRef): string => `${ref.namespace}/${ref.name}`;

/** Where a lookup looks, in this order: the stored node id, the host's node name, the boot MAC's port. */
export type LookupWay = 'id' | 'name' | 'mac';

/** What a lookup found: the host's own node, a node that is not the host's (with why), or nothing. */
export interface NodeLookup {
  node?: IronicNode;
  foreign?: IronicNode;
  reason?: string;
}

export interface NodeSummary {
  nodeId: string;
  provisionState: string;
  poweredOn: boolean;
}

export const summary = (node: IronicNode): NodeSummary => ({
  nodeId: node.uuid,
  provisionState: node.provision_state,
  poweredOn: node.power_state === 'power on',
});

/**
 * A registration's (or adoption's) answer: the node's power only where Ironic knows it. A node whose driver reports
 * no power state (fake-hardware until a power change sets one) says nothing of the machine: as BMO's
 * UpdateHardwareState, the host's recorded power stands, and a host recorded on is not powered on again for it.
 */
export interface RegisteredNode extends Omit<NodeSummary, 'poweredOn'> {
  poweredOn?: boolean;
}

export function registeredSummary(node: IronicNode): RegisteredNode {
  const { poweredOn, ...rest } = summary(node);
  return node.power_state === 'power on' || node.power_state === 'power off' ? { ...rest, poweredOn } : rest;
}

export const operationFailed = (message: string): ApplicationFailure =>
  ApplicationFailure.nonRetryable(message, FAILURE.operationFailed);

/** What a failure says when Ironic kept no reason anywhere (an aborted step writes last_error only). */
export const NO_IRONIC_REASON = "no reason given by Ironic (the node's last_error is empty and its history holds no error)";

/** The newest error in a node's history (oldest first or not), or undefined. */
export const newestHistoryError = (history: readonly { created_at: string; severity: string; event: string }[]): string | undefined =>
  history
    .filter((e) => e.severity === 'ERROR')
    .sort((a, b) => a.created_at.localeCompare(b.created_at))
    .at(-1)?.event;

/**
 * Ironic's reason for a failure it reports on a node: `last_error`, else the newest error of the
 * node's history (API 1.78), where Ironic keeps it once its power sync has cleared `last_error`
 * (within a sync interval: a reader that comes late, e.g. a retry after a worker died, finds it
 * there). Its sync clears it only with `[conductor] node_history` on; with it off (Metal3's
 * ironic-image) the history read answers an empty list and `last_error` is kept, so an empty one
 * means Ironic gave none. An Ironic older than API 1.78 refuses the read: no reason then.
 */
export async function ironicReason(ironic: IronicClient, node: IronicNode): Promise<string> {
  if (node.last_error) return node.last_error;
  try {
    return newestHistoryError(await ironic.getNodeHistory(node.uuid)) ?? NO_IRONIC_REASON;
  } catch (err) {
    if (err instanceof IronicError && (err.kind === 'rejected' || err.kind === 'too-old' || (err.kind === 'not-found' && err.missingNode === undefined))) return NO_IRONIC_REASON;
    throw err;
  }
}

/** The host's node is gone from Ironic: a typed failure the host workflow answers by registering again. */
export const nodeGone = (nodeId: string): ApplicationFailure => ApplicationFailure.nonRetryable(nodeGoneMessage(nodeId), FAILURE.nodeGone, { nodeId });

/**
 * Ironic's errors (and any other) as the failures the workflow branches on: the
 * mapping every Ironic activity uses (activities/common/failures.ts). Secrets never reach the message.
 */
export function translate(err: unknown): never {
  throw toFailure(err);
}

/** An activity as Temporal registers it: heartbeating while it runs, Ironic errors translated. */
export const wrap =
  <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
  async (...args: A): Promise<R> => {
    const stop = keepAlive();
    try {
      return await fn(...args);
    } catch (err) {
      return translate(err);
    } finally {
      stop();
    }
  };

export type Step =
  | { done: true }
  | { wait: string }
  | { fail: string }
  /**
   * A failure Ironic reports on the node: the message is followed by Ironic's reason (ironicReason). `unlessIronics`:
   * the step to take instead when that reason is Ironic's own saturation (transient.ts), which the plan cannot see
   * once Ironic's power sync has cleared `last_error` (the reason is then in the node's history).
   */
  | { failed: string; unlessIronics?: VerbStep }
  | VerbStep;

export interface VerbStep {
  verb: string;
  prepare?: () => Promise<Record<string, unknown> | void>;
  /**
   * Node fields the verb needs set first, written in the same PATCH as the sent marker
   * (one request instead of two; both or neither land). Computed from the node the plan saw.
   */
  patch?: () => Promise<JsonPatchOp[]> | JsonPatchOp[];
  /** Maintenance that Ironic itself set with this fault (e.g. `service failure`) is cleared before the verb; any other refuses it. */
  ownFault?: string;
  /**
   * The verb this activity sends next once this one is done, announced in this verb's sent marker (sent-marker.ts):
   * sent then without a marker of its own, so without a PATCH when its `patch` has nothing left to write.
   */
  then?: ThenVerb;
}

/** Metal3's automatedCleaningMode on the node, for a step's `patch` before the verb that may clean (nothing when it already is). */
export const automatedCleanOps = (node: IronicNode, value: boolean): JsonPatchOp[] =>
  node.automated_clean === value ? [] : [{ op: 'add', path: '/automated_clean', value }];

/** Ironic still working on the node's provision state (the watcher's fields tell). */
export const provisioning = (state: NodeState): boolean => TRANSITIONAL_STATES.has(state.provision_state);

/**
 * The next step from the node as read and the verbs sent so far (`issued`, in order, across the activity's
 * attempts). `unanswered`: the verbs whose latest send got no answer in time (Ironic too busy to answer), so a
 * failure Ironic reports without a reason may be its own saturation rather than the host's.
 */
export type Plan = (node: IronicNode, issued: readonly string[], unanswered: readonly string[]) => Step;

/**
 * Whether the verb marked on the node (its sent marker, written just before the verb) was carried out: the node
 * moved since. Not when Ironic rolled the verb back for want of a free conductor worker: it restores the states
 * and records why, which moves `provision_updated_at` although nothing was done (its provisioning_error_handler).
 */
export function markedVerbLanded(node: IronicNode, marker: { before: string }): boolean {
  if (marker.before === provisionMoment(node)) return false;
  const stateBefore = marker.before.slice(0, marker.before.lastIndexOf('@'));
  return !(node.provision_state === stateBefore && noFreeWorker(node.last_error));
}

/**
 * markedVerbLanded, with the case it cannot tell read from the node's history: the node back in the state it was in
 * with no last_error is a verb carried out quickly (an inspection), or Ironic's rollback for want of a free conductor
 * worker whose last_error its power sync cleared since (it does only with `[conductor] node_history` on, and the
 * rollback is then in the history). With history off Ironic keeps that last_error and the history is empty: the
 * node alone decides, as before. A rollback recorded after the marker's moment says the verb was not carried out.
 */
export async function verbLanded(ironic: IronicClient, node: IronicNode, marker: { before: string }): Promise<boolean> {
  if (!markedVerbLanded(node, marker)) return false;
  const at = marker.before.lastIndexOf('@');
  const since = Date.parse(marker.before.slice(at + 1));
  if (node.provision_state !== marker.before.slice(0, at) || node.last_error || Number.isNaN(since)) return true;
  let history: Awaited<ReturnType<IronicClient['getNodeHistory']>>;
  try {
    history = await ironic.getNodeHistory(node.uuid);
  } catch (err) {
    // An Ironic older than API 1.78 has no history to read: the node alone decides.
    if (err instanceof IronicError && (err.kind === 'rejected' || err.kind === 'too-old' || (err.kind === 'not-found' && err.missingNode === undefined))) return true;
    throw err;
  }
  return !history.some((e) => e.severity === 'ERROR' && noFreeWorker(e.event) && Date.parse(e.created_at) > since);
}

export interface DriveOptions {
  /**
   * Reads the node in place of the loop's first read (and of its next ones, until it succeeds): the node settings
   * check (node-settings.ts firstRead), which returns the node brought in line with the spec.
   */
  firstRead?: (nodeId: string) => Promise<IronicNode>;
}

export interface NodeDriverDeps {
  ironic: IronicClient;
  poll: PollOptions;
  watcher: NodeWatcher;
}

export function createNodeDriver(deps: NodeDriverDeps) {
  const { ironic, poll, watcher } = deps;

  /**
   * Waits (heartbeating) until the watcher sees `node` change, vanish, or a re-read is due (`rereadMs`), and
   * returns the watched fields as it read them on a change. With `working`, a change to a state that says Ironic is
   * still at it (a transitional provision state, a pending power change) is waited out too, on the watcher's reads
   * alone: the caller reads the whole node once Ironic is done, not at every state in between.
   */
  async function waitForChange(node: NodeState, details: unknown, opts: { working?: (state: NodeState) => boolean; rereadMs?: number } = {}): Promise<NodeState | undefined> {
    const ctx = activityContext();
    const started = Date.now();
    let seen = node;
    for (;;) {
      heartbeat(details);
      const wait = watcher.waitFor(seen.uuid, seen, WAIT_SLICE_MS);
      const result = await (ctx ? Promise.race([wait, ctx.cancelled]) : wait);
      if (result.outcome === 'changed' && result.state && opts.working?.(result.state)) {
        seen = result.state;
        continue;
      }
      if (result.outcome === 'changed') return result.state;
      if (result.outcome !== 'timeout') return undefined;
      const waited = Date.now() - started;
      if (waited >= REREAD_MS) return undefined;
      // A shorter re-read (after a verb) stands only until the watcher sees the node move: Ironic took the verb then.
      if (seen === node && opts.rereadMs !== undefined && waited >= opts.rereadMs && watcher.readSince(seen.uuid, started)) return undefined;
    }
  }

  /**
   * The host's node: by the id metalflow stored, then by the host's own name
   * (`namespace~name`, Metal3's convention), then by boot MAC. A node found by
   * id or name is the host's unless its ownership mark names another host; a
   * node found only by MAC is the host's only with its mark: otherwise it is
   * an operator's own node (or another host's) and never touched.
   */
  async function lookupNode(target: NodeTarget, ways: readonly LookupWay[] = ['id', 'name', 'mac']): Promise<NodeLookup> {
    const mine = ownerMark(target.ref);
    const judge = (node: IronicNode, how: string): NodeLookup => {
      const owner = node.extra?.[OWNER_KEY];
      if (owner === mine) return { node };
      const label = node.name ? `${node.name} (${node.uuid})` : node.uuid;
      if (owner !== undefined) return { foreign: node, reason: `Ironic node ${label}, found by ${how}, belongs to host ${String(owner)} (extra.${OWNER_KEY})` };
      if (how !== 'boot MAC') return { node };
      return {
        foreign: node,
        reason: `Ironic node ${label} has boot MAC ${target.bootMACAddress} but no metalflow ownership mark (extra.${OWNER_KEY}): it is not this host's node`,
      };
    };
    if (target.nodeId && ways.includes('id')) {
      const byId = await ironic.getNode(target.nodeId);
      if (byId) return judge(byId, 'its stored id');
    }
    const name = ironicNodeName(target.ref);
    if (ways.includes('name')) {
      const byName = await ironic.getNode(name);
      if (byName) return judge(byName, 'name');
    }
    if (!target.bootMACAddress || !ways.includes('mac')) return {};
    const byMac = await ironic.findNodeByMac(target.bootMACAddress);
    // The node of the host's own name is what a lookup by name finds first (names are unique): judged as found by name.
    return byMac ? judge(byMac, byMac.name === name ? 'name' : 'boot MAC') : {};
  }

  /** For registration: the host's node, none, or a failure naming the node that holds its boot MAC. */
  async function findNode(target: NodeTarget, ways?: readonly LookupWay[]): Promise<IronicNode | undefined> {
    const found = await lookupNode(target, ways);
    if (found.foreign) {
      throw operationFailed(
        `boot MAC ${target.bootMACAddress} is already registered to Ironic node ${found.foreign.name ?? found.foreign.uuid}: ${found.reason}; ` +
          `metalflow neither takes it over nor changes it (remove that node or its port, or set its extra.${OWNER_KEY} to "${ownerMark(target.ref)}" to hand it to this host)`,
      );
    }
    return found.node;
  }

  async function mustGetNode(nodeId: string, version?: string): Promise<IronicNode> {
    const node = await ironic.getNode(nodeId, version);
    if (!node) throw nodeGone(nodeId);
    return node;
  }

  /**
   * Walks a node to a goal: each turn re-reads it and asks the plan for one
   * step. Verbs sent are remembered in heartbeat details across retries.
   */
  async function drive(nodeId: string, plan: Plan, opts: DriveOptions = {}): Promise<IronicNode> {
    const ctx = activityContext();
    const previous = ctx?.info.heartbeatDetails as { issued?: string[]; unanswered?: string[] } | undefined;
    const issued = [...(previous?.issued ?? [])];
    /** Verbs whose latest send got no answer in time (carried in the heartbeat details, as `issued`). */
    const unanswered = new Set(previous?.unanswered ?? []);
    const details = () => (unanswered.size > 0 ? { issued, unanswered: [...unanswered] } : { issued });
    const polling = poller(poll);
    // A lock Ironic keeps past its limit ends the operation naming it, not waited on in silence (node-lock.ts).
    const lock = lockWatch(ironic, nodeId, poll.lockLimitMs);
    // Ironic's back-pressure waited out within the attempt: its reads and its verbs each have their own run.
    const readPatience = patience();
    const verbPatience = patience();
    const key = markerKey();
    let first = true;
    /**
     * A verb this attempt sent that got no answer: until a read shows whether Ironic carried it out (its sent
     * marker and the node moved since), or it is sent again and answered.
     */
    let unsure: string | undefined;
    /**
     * The last whole read (or the node as the last PATCH wrote it) with the watcher's newer fields over it. The plans
     * decide on the watched fields, the verbs sent, and fields only metalflow writes (instance_info, automated_clean,
     * deploy_interface: as written or read): the next step is decided on it without a read of the whole node, unless
     * the node is in maintenance (whose fault the watcher does not read).
     */
    let watched: IronicNode | undefined;
    /** The verb announced by this activity's marker on the node (its `then`), until it is sent. */
    let announced: ThenVerb | undefined;
    let firstRead = opts.firstRead;
    for (;;) {
      let node: IronicNode | undefined;
      let step: Step | undefined;
      /** The step was decided on the watched node: a PATCH Ironic rejects (a field changed unseen) is decided again on a read. */
      let fromWatch = false;
      if (watched && !TRANSITIONAL_STATES.has(watched.provision_state)) {
        step = plan(watched, issued, [...unanswered]);
        if ('done' in step) return watched;
        if (!watched.maintenance) {
          node = watched;
          fromWatch = true;
        } else step = undefined;
      }
      watched = undefined;
      if (!node || !step) {
        try {
          node = firstRead ? await firstRead(nodeId) : await mustGetNode(nodeId);
        } catch (err) {
          // The node locked (the settings' PATCH): read and try again, as for a verb.
          if (firstRead && err instanceof IronicError && err.kind === 'conflict') {
            if (err.locked) await lock.locked(err);
            await polling.wait(details());
            continue;
          }
          // Ironic too busy to answer a read: read again after a pause.
          if (await readPatience.wait(err, details())) continue;
          throw err;
        }
        readPatience.reset();
        firstRead = undefined;
        if (first) {
          first = false;
          // A verb an earlier attempt sent, whose record died with its worker: the node moved since.
          const marked = ownMarker(node, key);
          if (marked && !issued.includes(marked.verb) && (await verbLanded(ironic, node, marked))) issued.push(marked.verb);
          // The verb it announced after that one: sent when the node is where only that verb leads, else still to send.
          if (marked?.then && !issued.includes(marked.then)) {
            if (announcedVerbSent(node, marked)) issued.push(marked.then);
            else if (issued.includes(marked.verb)) announced = marked.then;
          }
        }
        if (unsure !== undefined) {
          // This attempt's verb that got no answer, judged as a new attempt would judge it: by its marker.
          const marked = ownMarker(node, key);
          if ((marked?.verb === unsure && (await verbLanded(ironic, node, marked))) || (marked?.then === unsure && announcedVerbSent(node, marked))) {
            issued.push(unsure);
            unsure = undefined;
            heartbeat(details());
          }
        }
        step = TRANSITIONAL_STATES.has(node.provision_state) ? { wait: node.provision_state } : plan(node, issued, [...unanswered]);
      }
      if ('done' in step) return node;
      if ('fail' in step) throw operationFailed(step.fail);
      if ('failed' in step) {
        const reason = await ironicReason(ironic, node);
        if (!(step.unlessIronics && transientIronicError(reason))) throw operationFailed(`${step.failed}: ${reason}`);
        step = step.unlessIronics;
      }
      if ('verb' in step) {
        // A cancelled activity never starts anything new in Ironic: the host has moved on.
        if (ctx?.cancellationSignal.aborted) throw new CancelledFailure('the activity was cancelled before it sent ' + step.verb);
        if (node.maintenance && !(step.ownFault !== undefined && node.fault === step.ownFault)) {
          throw operationFailed(`Ironic node ${nodeId} is in maintenance: ${await ironicReason(ironic, node)}`);
        }
        let sending = false;
        try {
          if (node.maintenance) await ironic.clearMaintenance(nodeId);
          const extra = (await step.prepare?.()) ?? {};
          // A verb this activity's marker announced is sent on that marker: a PATCH only for what it still has to write.
          const onAnnouncement = announced === step.verb;
          const marked = key !== undefined && !UNMARKED_VERBS.has(step.verb) && !onAnnouncement;
          const marker = marked ? [markerOp({ key, verb: step.verb, before: provisionMoment(node), ...(step.then ? { then: step.then } : {}) })] : [];
          const ops = [...((await step.patch?.()) ?? []), ...marker];
          // Ironic answers a PATCH with the node as written: the next decision starts from it, not from a read.
          const written = ops.length > 0 ? await ironic.patchNode(nodeId, ops) : undefined;
          if (marked) announced = step.then;
          sending = true;
          if (written) lock.clear();
          await ironic.setProvisionState(nodeId, step.verb, extra);
          lock.clear();
          if (onAnnouncement) announced = undefined;
          issued.push(step.verb);
          unanswered.delete(step.verb);
          unsure = undefined;
          verbPatience.reset();
          heartbeat(details());
          polling.reset();
          // Not read back at once (a GET per verb): the shared watcher sees the node leave what was read before the
          // verb, and its transitional states are waited out on the watcher's reads alone.
          const state = await waitForChange(node, details(), { working: provisioning, rereadMs: AFTER_VERB_REREAD_MS });
          if (state) watched = { ...(written ?? node), ...state };
          continue;
        } catch (err) {
          // No answer to the verb itself: Ironic may have taken it. The next read decides, as a retry's would.
          if (sending && err instanceof IronicError && err.kind === 'timed-out') {
            unsure = step.verb;
            unanswered.add(step.verb);
            heartbeat(details());
          }
          // Refused for now (503), or no answer: wait, read again and decide again. Never sent again blind.
          if (await verbPatience.wait(err, details())) continue;
          // 409: the node is locked or moved on since we read it; re-read and decide again.
          // 400 for a verb: Ironic may have finished what an earlier attempt asked (the state
          // moved since our read); re-plan from a fresh read, and fail only if nothing moved.
          const rejected = err instanceof IronicError && err.kind === 'rejected';
          // The PATCH of a step decided on the watched node, refused as a whole (nothing written, no marker): decided
          // again on a read of the whole node.
          if (rejected && !sending && fromWatch) continue;
          if (rejected) {
            // "Nothing moved" is the provision moment too: a verb of ours Ironic took late (its answer timed out) may
            // have passed through a state that refused the PATCH and be over already, the node back where it was.
            const again = await mustGetNode(nodeId);
            if (provisionMoment(again) === provisionMoment(node) && again.target_provision_state === node.target_provision_state) throw err;
            continue;
          }
          if (!(err instanceof IronicError && err.kind === 'conflict')) throw err;
          if (err.locked) await lock.locked(err);
        }
        // Locked by Ironic: the state may not change, so poll instead of waiting for a change.
        await polling.wait(details());
        continue;
      }
      const state = await waitForChange(node, details(), { working: provisioning });
      if (state) watched = { ...node, ...state };
    }
  }

  return { waitForChange, lookupNode, findNode, mustGetNode, drive };
}

export type NodeDriver = ReturnType<typeof createNodeDriver>;
