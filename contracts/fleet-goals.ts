/**
 * When a host has done what a fleet operation asked, read from the host's own
 * view, pure: the fleet's activities call it on every poll. `since` is when
 * the fleet started the host: only the host's operations from then on count.
 * A host that cannot do the operation (gone, paused, detached, being deleted,
 * its workflow ended) is skipped with the reason, never counted as failed.
 */
import type { FleetOperation } from '../model/fleet';
import type { Image } from '../model/host';
import type { HostView, OperationKind, OperationRecord } from './host';
import { fleetPowerKey } from './fleet';
import { DEFAULT_SITE } from '../model/site';

export type HostFinding =
  | { kind: 'running'; view: HostView }
  /** The host workflow completed: the host was deleted. */
  | { kind: 'deleted' }
  | { kind: 'absent' }
  | { kind: 'ended'; status: string };

export type FleetHostResult =
  | { outcome: 'succeeded'; note?: string }
  | { outcome: 'failed'; error: string }
  | { outcome: 'skipped'; reason: string }
  /** A cancel with abortInFlight stopped it (only the abort activity answers this). */
  | { outcome: 'cancelled'; reason: string };

/** The host operation a fleet operation makes the host run (its failure is the host's failure). */
export const HOST_OPERATION: Record<FleetOperation['kind'], OperationKind> = {
  reboot: 'reboot',
  powerOff: 'power',
  powerOn: 'power',
  provision: 'provision',
  deprovision: 'deprovision',
  delete: 'delete',
  reinspect: 'inspect',
  detach: 'detach',
  attach: 'enroll',
  clean: 'clean',
  // Its result is its remediation's (activities/fleet/remediate.ts), never one host operation's.
  remediate: 'power',
  moveSite: 'move',
};

/**
 * States in which a requested inspection runs (now, or once the host is
 * available again): elsewhere it would wait for ever (a provisioned host is
 * never inspected) and the request would linger for the next deprovision.
 */
const REINSPECTABLE: ReadonlySet<string> = new Set(['', 'unmanaged', 'registering', 'inspecting', 'preparing', 'available', 'deprovisioning', 'match profile', 'ready']);

/** Keys a powerOn releases: one fleet's, or every fleet's hold the host has. */
export function keysToRelease(op: Extract<FleetOperation, { kind: 'powerOn' }>, holds: Record<string, unknown>): string[] {
  if (op.fromFleet) return [fleetPowerKey(op.fromFleet)];
  return Object.keys(holds).filter((k) => k.startsWith('fleet-'));
}

/** Where the fleet can change hosts: `kubernetes` when it can write their BareMetalHosts (a worker in Kubernetes mode). */
export interface FleetReach {
  kubernetes?: boolean;
}

/** Why the host cannot take the operation now, or undefined. */
export function whyNotActionable(op: FleetOperation, found: HostFinding, reach: FleetReach = {}): string | undefined {
  if (found.kind === 'absent' || found.kind === 'deleted') return op.kind === 'delete' ? undefined : 'the host does not exist (deleted)';
  if (found.kind === 'ended') return `the host's workflow ended abnormally (${found.status}); re-adopt it first (POST …/adopt)`;
  const { view } = found;
  // The controller would hand the host its BareMetalHost's spec again: the fleet changes the object or nothing.
  if (view.managedBy === 'kubernetes' && !reach.kubernetes) {
    return "the host is driven by its BareMetalHost (Kubernetes mode) and this worker has no Kubernetes API server to change it: change it there, or run the fleet on the cluster's worker";
  }
  if (view.paused) return `the host is paused (${view.paused.reason})`;
  // Attaching is what a detached host is for; a detached host asked to detach has reached its goal before this.
  if (view.status.operationalStatus === 'detached' && op.kind !== 'attach') return 'the host is detached';
  if (view.deleteRequested && op.kind !== 'delete') return 'the host is being deleted';
  if (!view.spec) return 'the host has no spec yet';
  const state = view.status.provisioning.state;
  if (op.kind === 'reinspect' && !REINSPECTABLE.has(state)) {
    return `the host is ${state}: it is inspected only when not provisioned (deprovision it first)`;
  }
  if (op.kind === 'clean') {
    // A manual clean has no trigger on a BareMetalHost yet (docs/cleaning-and-firmware.md).
    if (view.managedBy === 'kubernetes') return 'the host is driven by its BareMetalHost, which has no manual clean trigger yet';
    // Its clean (running, waiting to retry, or the prepare after it) keeps it in preparing; other states refuse a clean.
    if (state !== 'available' && state !== 'preparing') return `the host is ${state || 'not registered'}: a clean runs only on an available host`;
    if (state === 'available' && view.spec.image) return 'the host has an image and is about to provision';
  }
  return undefined;
}

function failedSince(view: HostView, kind: OperationKind, since: string): OperationRecord | undefined {
  const ops = [...view.operations, ...(view.currentOperation ? [view.currentOperation] : [])];
  return ops.find((o) => o.kind === kind && o.startedAt >= since && o.outcome === 'failed');
}

function reached(op: FleetOperation, view: HostView, since: string, fleet: string): boolean {
  const { status, spec, power } = view;
  const ok = status.operationalStatus === 'OK';
  switch (op.kind) {
    case 'reboot':
      return !power.reboot && view.operations.some((o) => o.kind === 'reboot' && o.startedAt >= since && o.outcome === 'succeeded');
    case 'powerOff':
      return fleetPowerKey(fleet) in power.holds && !status.poweredOn && !view.currentOperation;
    case 'powerOn':
      // Another key still held keeps it off, and spec.online false too: what the fleet asked is done.
      return keysToRelease(op, power.holds).length === 0 && !view.currentOperation && (status.poweredOn || Object.keys(power.holds).length > 0 || !spec?.online);
    case 'provision':
      // The image it runs, not only the one asked for: a provisioned host given a new URL is deprovisioned first.
      return status.provisioning.state === 'provisioned' && spec?.image?.url === op.image.url && status.provisioning.image?.url === op.image.url && ok && !view.currentOperation;
    case 'deprovision':
      return status.provisioning.state === 'available' && !spec?.image && !view.currentOperation;
    case 'delete':
      return false;
    case 'reinspect':
      // An inspection that ended after the fleet started the host, and the hardware details it read.
      return status.hardware !== undefined && view.operations.some((o) => o.kind === 'inspect' && o.outcome === 'succeeded' && (o.endedAt ?? '') >= since);
    case 'detach':
      return status.operationalStatus === 'detached' && !view.currentOperation;
    case 'attach':
      // Registered again (a failed registration leaves the status `error`, not OK).
      return ok && !view.currentOperation;
    case 'remediate':
      return false;
    case 'moveSite':
      // At the site (its move, if it needed one, done): a host already there has nothing to do.
      return (spec?.site ?? DEFAULT_SITE) === op.site && !view.siteMove && ok && !view.currentOperation;
    case 'clean':
      // A clean that started after the fleet started the host succeeded, and the host is available again.
      return (
        status.provisioning.state === 'available' &&
        !view.cleanRequest &&
        !view.currentOperation &&
        view.operations.some((o) => o.kind === 'clean' && o.startedAt >= since && o.outcome === 'succeeded')
      );
  }
}

/** The host's result for this operation, or undefined while it is still on its way. */
export function fleetHostResult(op: FleetOperation, found: HostFinding, since: string, fleet: string, reach: FleetReach = {}): FleetHostResult | undefined {
  if (op.kind === 'delete' && (found.kind === 'deleted' || found.kind === 'absent')) return { outcome: 'succeeded' };
  if (found.kind === 'running' && reached(op, found.view, since, fleet)) return { outcome: 'succeeded' };
  const why = whyNotActionable(op, found, reach);
  if (why) return { outcome: 'skipped', reason: why };
  if (found.kind !== 'running' || op.kind === 'remediate') return undefined;
  const failed = failedSince(found.view, HOST_OPERATION[op.kind], since);
  if (failed) return { outcome: 'failed', error: `${failed.kind} failed: ${failed.error ?? found.view.status.errorMessage ?? 'no error given'}` };
  return undefined;
}

/**
 * How a host stopped by an abort (paused by the fleet, no operation running
 * any more) ended: what it reached or a failure before the stop stands;
 * else it is cancelled, with its operation's cancel reason or, when that
 * operation never ran, the pause's.
 */
export function abortedResult(op: FleetOperation, found: HostFinding & { kind: 'running' }, since: string, fleet: string, why: string): FleetHostResult {
  const kind = HOST_OPERATION[op.kind];
  if (reached(op, found.view, since, fleet)) return { outcome: 'succeeded' };
  const record = found.view.operations.filter((o) => o.kind === kind && o.startedAt >= since).at(-1);
  if (record?.outcome === 'failed') return { outcome: 'failed', error: `${kind} failed: ${record.error ?? 'no error given'}` };
  if (record?.outcome === 'cancelled') return { outcome: 'cancelled', reason: `${kind} cancelled: ${record.cancelReason ?? why}` };
  if (op.kind === 'delete') {
    return { outcome: 'cancelled', reason: `delete stopped: the host is paused (${why}) and still to be deleted (a delete cannot be withdrawn); unpause it to let the delete go on` };
  }
  return { outcome: 'cancelled', reason: `paused before its ${kind} ran (${why}); unpause the host to let it go on` };
}

/**
 * A deprovision the abort stopped before it ran (the host still provisioned,
 * running the image its status names): that image goes back in its spec, so
 * the host is as it was and unpausing it deprovisions nothing.
 */
export function imageToRestore(op: FleetOperation, view: HostView): Image | undefined {
  if (op.kind !== 'deprovision' || view.spec?.image) return undefined;
  const { state, image } = view.status.provisioning;
  return state === 'provisioned' && image ? image : undefined;
}
