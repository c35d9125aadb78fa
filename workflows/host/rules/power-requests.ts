/**
 * Reboot and power-off requests, with Metal3's reboot annotation semantics
 * (BMO's manageHostPower): a one-shot reboot (`reboot.metal3.io`, or the API)
 * and keyed power-off requests (`reboot.metal3.io/<key>`) that keep the host
 * off until every key is released; hard wins when several ask. Pure: the host
 * workflow applies changes here and `decide()` reads the goal from here.
 */
import type { HostSpec, ProvisioningState } from '../../../model/host';
import type { HostEvent } from '../../../model/host-event';
import { emptyPowerRequests, REMEMBERED_REQUESTS, type PowerRequestChange, type PowerRequests, type RebootMode } from '../../../contracts/power-requests';

export * from '../../../contracts/power-requests';

const harder = (a: RebootMode | undefined, b: RebootMode): RebootMode => (a === 'hard' || b === 'hard' ? 'hard' : 'soft');

/** How a keyed power-off request on a host with spec.disablePowerOff was read (a Warning Event, as for annotation values). */
export const keyedRebootEvent = (key: string, mode: RebootMode): HostEvent => ({
  type: 'Warning',
  reason: 'InvalidAnnotationValue',
  message: `power-off request "${key}" (reboot.metal3.io/${key}) read as one ${mode} reboot, as Metal3 does: spec.disablePowerOff is set, so the host is rebooted, never held off; the key is kept until released`,
});

/** Keys a change adds that were not held before (with their modes). */
export function addedHolds(current: PowerRequests | undefined, change: PowerRequestChange): [string, RebootMode][] {
  return Object.entries(change.holdOff ?? {}).filter(([k]) => !(k in (current?.holds ?? {})));
}

/**
 * The requests after a (checked) change; `seq` moves only when something changed.
 * `rememberIds`: a reboot's requestId is remembered and a repeat of one is ignored.
 * `rebootForKeys`: each key added asks a one-shot reboot too (a host with spec.disablePowerOff, where
 * Metal3 reboots instead of powering off; its keys are kept but never hold it off: activeHolds).
 */
export function applyPowerRequestChange(current: PowerRequests | undefined, change: PowerRequestChange, rememberIds = false, rebootForKeys = false): PowerRequests {
  const p: PowerRequests = JSON.parse(JSON.stringify(current ?? emptyPowerRequests())) as PowerRequests;
  const before = JSON.stringify(p);
  const id = rememberIds ? change.reboot?.requestId : undefined;
  const repeated = id !== undefined && (p.requestIds ?? []).includes(id);
  if (id !== undefined && !repeated) p.requestIds = [...(p.requestIds ?? []), id].slice(-REMEMBERED_REQUESTS);
  if (change.reboot && !repeated) {
    const mode = harder(p.reboot?.mode, change.reboot.mode ?? 'soft');
    p.reboot = { mode, api: true, annotation: p.reboot?.annotation ?? false };
  }
  if (change.rebootAnnotation) {
    if (p.annotation === undefined) {
      p.annotation = 'pending';
      p.reboot = { mode: harder(p.reboot?.mode, change.rebootAnnotation.mode ?? 'soft'), api: p.reboot?.api ?? false, annotation: true };
    } else if (p.annotation === 'pending' && p.reboot) {
      p.reboot.mode = harder(p.reboot.mode, change.rebootAnnotation.mode ?? 'soft');
    }
  } else if (change.rebootAnnotation === null && p.annotation !== undefined) {
    // Removed before its reboot ran: the reboot is no longer wanted (unless the API asked too).
    if (p.reboot?.annotation && !p.reboot.api) delete p.reboot;
    else if (p.reboot) p.reboot.annotation = false;
    delete p.annotation;
  }
  if (change.holdOff) {
    for (const [, mode] of rebootForKeys ? addedHolds(p, change) : []) {
      p.reboot = { mode: harder(p.reboot?.mode, mode), api: true, annotation: p.reboot?.annotation ?? false };
    }
    if (change.onlyThese) p.holds = {};
    for (const [k, mode] of Object.entries(change.holdOff)) p.holds[k] = mode;
  }
  for (const k of change.release ?? []) delete p.holds[k];
  if (JSON.stringify(p) !== before) p.seq += 1;
  return p;
}

/** The one-shot reboot has run (or an operation power-cycled the host anyway). */
export function rebootServed(current: PowerRequests | undefined): PowerRequests | undefined {
  if (!current?.reboot) return current;
  const p: PowerRequests = { ...current, seq: current.seq + 1 };
  delete p.reboot;
  if (p.annotation === 'pending') p.annotation = 'done';
  return p;
}

const STEADY: ProvisioningState[] = ['available', 'provisioned', 'externally provisioned'];
export const isSteadyState = (state: ProvisioningState): boolean => STEADY.includes(state);

/** Keyed requests that count: none on a host whose power must never go off. */
export function activeHolds(p: PowerRequests | undefined, spec: HostSpec): RebootMode[] {
  if (!p || spec.disablePowerOff) return [];
  return Object.values(p.holds);
}

export type PowerGoal =
  | { action: 'none' }
  /** A power operation: to `on`, soft or hard (hard when mode is absent, as before requests existed). */
  | { action: 'power'; on: boolean; mode?: RebootMode }
  /** A reboot operation: off (soft first unless hard) and back to spec.online. */
  | { action: 'reboot'; mode: RebootMode };

/**
 * What the host's power should do now, in a steady state: keyed requests keep it off (hard
 * if any asks hard); otherwise a waiting one-shot reboot runs; otherwise power follows
 * spec.online. As in Metal3, a one-shot reboot of a host held off is served by its being off.
 */
export function powerGoal(poweredOn: boolean, spec: HostSpec, p: PowerRequests | undefined): PowerGoal {
  const holds = activeHolds(p, spec);
  if (holds.length > 0) {
    return poweredOn ? { action: 'power', on: false, mode: holds.includes('hard') ? 'hard' : 'soft' } : { action: 'none' };
  }
  if (p?.reboot) return { action: 'reboot', mode: p.reboot.mode };
  if (poweredOn !== spec.online) return { action: 'power', on: spec.online };
  return { action: 'none' };
}

/** Requests after looking at the host: a one-shot reboot of a host that is held off is served. */
export function settlePowerRequests(poweredOn: boolean, spec: HostSpec | undefined, p: PowerRequests | undefined): PowerRequests | undefined {
  if (!spec || !p?.reboot || poweredOn) return p;
  return activeHolds(p, spec).length > 0 ? rebootServed(p) : p;
}

/**
 * `spec.online: false` as Metal3 powers off: soft (a shutdown,
 * hard if it fails within the soft timeout), hard at once only when the host's last
 * operation failed (BMO: `ErrorCount > 0` makes the power off hard). Applies to a power
 * step without a mode, the one spec.online (or a corrected mismatch) asks for; requests
 * with a mode keep theirs. Undefined: nothing to change.
 */
export function offlinePowerStep(step: { on: boolean; mode?: RebootMode } | undefined, errorCount: number): { on: false; mode: RebootMode } | undefined {
  if (!step || step.on || step.mode) return undefined;
  return { on: false, mode: errorCount > 0 ? 'hard' : 'soft' };
}
