/**
 * What a read of the node says of a power change metalflow sent or may have
 * sent: every power PUT (teardown.ts powerFrom, power/activities.ts
 * changeNodePower) is judged by these before it is sent again.
 *
 * Ironic takes a power change by setting the node's `target_power_state` (to
 * the state the change ends in) and locking the node before it answers 202;
 * the node shows the target until the change is done. So a change that was
 * taken shows on the node: at its end state, or on its way there. What no
 * read shows is a change still queued in Ironic: a saturated Ironic answers
 * (and carries out) a request after the client gave up on it (37 s against
 * the client's 30 s in a benchmark run), and a change sent again then met the
 * first (a 409, the node locked by it). A change that got no answer is
 * therefore given a while to show before it is sent again (LANDING_MS).
 *
 * What an attempt sent travels in its heartbeat details, which reach the
 * server seconds later or, with a worker killed, never: so before each power
 * PUT the node's `extra.metalflow_power` names the activity call and the
 * target (POWER_MARKER). A later attempt of the same call that finds it and
 * no record of its answer judges it as a change that got no answer: taken
 * when the node shows it, failed when Ironic wrote a new `last_error` since,
 * otherwise given LANDING_MS to show before it is sent again.
 */
import type { IronicPowerTarget, JsonPatchOp } from '../../clients/ironic/client';
import { IronicError } from '../../clients/ironic/errors';
import type { IronicNode } from '../../clients/ironic/types';

/**
 * How long a power change that got no answer is given to show on the node before it is sent again: two of the
 * client's request timeouts. A change that never reached Ironic costs this wait; one sent again too early is
 * carried out twice (Ironic answers the second 409 while the first holds the node, or carries out both).
 */
export const LANDING_MS = 60_000;

/** A change sent whose answer never came: its target and when it went out (ms since epoch, on the sender's clock). */
export interface Unanswered {
  target: IronicPowerTarget;
  at: number;
}

/** The power state a target ends in, as Ironic writes it to `target_power_state` while it works. */
export const endState = (target: IronicPowerTarget): 'power on' | 'power off' =>
  target === 'power on' || target === 'rebooting' || target === 'soft rebooting' ? 'power on' : 'power off';

/** A reboot ends where it started: no read tells one carried out from one never sent. */
export const isReboot = (target: IronicPowerTarget): boolean => target === 'rebooting' || target === 'soft rebooting';

/**
 * What the node says of a change to `target`: `reached` (on/off only: at its end state, nothing under way),
 * `under-way` (Ironic works towards the same end state: ours taken, or one with our end), `other` (a change
 * to the other state under way), `none` (nothing under way, not at the end state; for a reboot, nothing under way).
 */
export function changeSeen(node: Pick<IronicNode, 'power_state' | 'target_power_state'>, target: IronicPowerTarget): 'reached' | 'under-way' | 'other' | 'none' {
  const end = endState(target);
  if (node.target_power_state) return node.target_power_state === end ? 'under-way' : 'other';
  return !isReboot(target) && node.power_state === end ? 'reached' : 'none';
}

/** A power PUT that went out and got no answer (timed out, or its connection closed under it). */
export const unanswered = (err: unknown): err is IronicError => err instanceof IronicError && err.outcomeUnknown === true;

/** Ironic's NodeLocked 409: the node is held by another action (a change of ours taken earlier, or anything else). */
export const lockedOut = (err: unknown): err is IronicError => err instanceof IronicError && err.kind === 'conflict' && err.locked === true;

/** Whether an unanswered change has had its time to show (LANDING_MS) without showing. */
export const landingOver = (u: Unanswered, now = Date.now(), landingMs = LANDING_MS): boolean => now - u.at >= landingMs;

/** An Unanswered read back from heartbeat details (another attempt's), or undefined when it is not one. */
export function unansweredFrom(value: unknown): Unanswered | undefined {
  const v = value as Partial<Unanswered> | undefined;
  return v && typeof v.target === 'string' && typeof v.at === 'number' ? { target: v.target, at: v.at } : undefined;
}

/** The node's `extra` key of the power marker: the last power change an activity call was about to send. */
export const POWER_MARKER = 'metalflow_power';

export interface PowerMarker {
  /** The activity call (sent-marker.ts markerKey), the same for each of its attempts. */
  key: string;
  target: IronicPowerTarget;
  /** The node's `last_error` before the PUT: Ironic clears it when it takes a change and writes its own when that fails. */
  lastError: string | null;
}

/** The PATCH op that writes the power marker, sent before the power PUT. */
export const powerMarkerOp = (marker: PowerMarker): JsonPatchOp => ({ op: 'add', path: `/extra/${POWER_MARKER}`, value: marker });

/** The power marker this activity call wrote, if the node holds one. */
export function ownPowerMarker(node: Pick<IronicNode, 'extra'>, key: string | undefined): PowerMarker | undefined {
  const m = node.extra?.[POWER_MARKER] as Partial<PowerMarker> | undefined;
  if (!key || !m || m.key !== key || typeof m.target !== 'string') return undefined;
  return { key, target: m.target, lastError: typeof m.lastError === 'string' ? m.lastError : null };
}

/**
 * A marked change an earlier attempt may have sent, with no record of its answer, judged on the node at a later
 * attempt's first read: `taken` (the node shows it, or Ironic wrote a new last_error: taken and failed), or
 * `unanswered` from now (queued in Ironic or never sent: it has LANDING_MS to show before it is sent again).
 */
export function judgeMarked(node: Pick<IronicNode, 'power_state' | 'target_power_state' | 'last_error'>, marker: PowerMarker, now = Date.now()): { taken: true } | { unanswered: Unanswered } {
  const seen = changeSeen(node, marker.target);
  if (seen === 'reached' || seen === 'under-way') return { taken: true };
  if (!node.target_power_state && node.last_error && node.last_error !== marker.lastError) return { taken: true };
  return { unanswered: { target: marker.target, at: now } };
}
