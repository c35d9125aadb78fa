/**
 * A fleet's ask of one host, answered by the host workflow itself: one
 * update (`fleetChange`) whose validator reads the host's own state and
 * either refuses with the host's result (already at the goal, cannot take
 * the change), refuses because it was already asked (a retried call), or
 * lets the handler apply the change as the matching update would
 * (powerRequests, setImage, deleteHost, requestInspection, applyDirectives,
 * applySpec, requestClean). A refused update leaves nothing in the host's
 * history.
 *
 * Why an update of its own: the fleet used to query each host's view before
 * it sent the change, and every query is a workflow task on the host's
 * worker; with `maxConcurrent` hosts started at once, the first host's change
 * waited behind up to that many queries. Now a host's start is one workflow
 * task, and the decision is the same pure function as before (`fleetAsk`,
 * which the fleet's activities also apply to a queried view where they still
 * read one: a host workflow that predates this update, or one that does not run).
 */
import { defineUpdate } from '@temporalio/workflow';
import type { FleetOperation } from '../model/fleet';
import type { HostRef } from '../model/host';
import type { HostView } from './host';
import { fleetHostResult, keysToRelease, type FleetHostResult, type FleetReach } from './fleet-goals';

/** Every fleet operation but `remediate`, which starts a remediation and asks nothing of the host workflow. */
export type FleetHostChange = Exclude<FleetOperation, { kind: 'remediate' }>;

export interface FleetChangeRequest {
  /** The fleet's name (its powerOff key is `fleet-<name>`). */
  fleet: string;
  operation: FleetHostChange;
  /** When the fleet started the host: the host's own records from then on are this change's. */
  since: string;
  /** The asking worker changes BareMetalHosts (FleetReach): such a host is refused with FLEET_CHANGE.viaObject. */
  kubernetes?: boolean;
}

export interface FleetChangeResult {
  /** The change moved the host's state (false: it already held it, e.g. the same image or key). */
  changed: boolean;
}

/** The types of a `fleetChange` refusal that are not the host's refusal of the change itself. */
export const FLEET_CHANGE = {
  /** The host needs nothing, or cannot take the change: the refusal's details[0] is its FleetHostResult. */
  settled: 'FleetHostSettled',
  /** Already asked (a retried call), or nothing to ask: the fleet waits for the goal. */
  wait: 'FleetHostWait',
  /** The host is driven by its BareMetalHost: the fleet changes the object. details[0]: FleetViaObject. */
  viaObject: 'FleetHostViaObject',
} as const;

/** What the fleet needs of the host to change its BareMetalHost: its keyed power-off requests (a powerOn releases the fleets'). */
export interface FleetViaObject {
  holds: Record<string, unknown>;
}

export const fleetChangeUpdate = defineUpdate<FleetChangeResult, [FleetChangeRequest]>('fleetChange');

/**
 * The update's id: one per fleet, host and start, so the server answers a
 * retried call within the host's run with the first call's outcome instead of
 * applying it again (across a continue-as-new the validator's `wait` does).
 */
export function fleetChangeUpdateId(fleet: string, ref: HostRef, kind: FleetOperation['kind'], since: string): string {
  return `fleet/${fleet}/${kind}/${ref.namespace}/${ref.name}/${since}`;
}

export type FleetAsk =
  | { kind: 'settled'; result: FleetHostResult }
  | { kind: 'wait'; why: string }
  | { kind: 'viaObject' }
  | { kind: 'send' };

/**
 * What the fleet does with a running host it starts, from the host's view:
 * leave it with a result (reached, or cannot take the operation), wait (a
 * retried call: the reboot or clean it asked for is waiting or has run; a
 * powerOn with no key to release), change its BareMetalHost, or send the change.
 */
export function fleetAsk(op: FleetHostChange, view: HostView, since: string, fleet: string, reach: FleetReach = {}): FleetAsk {
  const settled = fleetHostResult(op, { kind: 'running', view }, since, fleet, reach);
  // An attached host may still have a detach waiting for its state (invisible in its view): attach withdraws it all the same.
  const withdraw = op.kind === 'attach' && settled?.outcome === 'succeeded';
  if (settled && !withdraw) return { kind: 'settled', result: settled };
  // A reboot waiting, or one run since the fleet started the host, is this one (a retried call).
  if (op.kind === 'reboot' && (view.power.reboot || view.operations.some((o) => o.kind === 'reboot' && o.startedAt >= since))) {
    return { kind: 'wait', why: 'a reboot is already asked for' };
  }
  // A request held, or a clean run since the fleet started the host, is this one.
  if (op.kind === 'clean' && (view.cleanRequest || view.operations.some((o) => o.kind === 'clean' && o.startedAt >= since))) {
    return { kind: 'wait', why: 'a clean is already asked for' };
  }
  if (view.managedBy === 'kubernetes') return { kind: 'viaObject' };
  if (op.kind === 'powerOn' && keysToRelease(op, view.power.holds).length === 0) return { kind: 'wait', why: 'no power-off request of a fleet to release' };
  return { kind: 'send' };
}
