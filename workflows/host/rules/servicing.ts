/**
 * When a provisioned host is serviced, and why a changed
 * spec.raid / spec.firmware waits. Pure, like decide(): servicing needs the
 * host's HostUpdatePolicy, as in Metal3, and BMO's timing (spec.firmware at
 * the host's next reboot; an explicit clean request at once).
 */
import type { ProvisioningState } from '../../../model/host';
import type { CleanStep } from '../../../model/clean';
import type { HostState } from '../../../contracts/host';
import { pendingSettingsSteps } from '../../../model/host-settings';
import { servicingAllows } from '../../../model/host-update-policy';
import { powerGoal } from './power-requests';
import { firmwareHeldReason, heldServiceable, withHeld } from './firmware-held-rules';

const HELD_STATES: readonly ProvisioningState[] = ['provisioning', 'provisioned', 'externally provisioned'];

/**
 * The change a provisioned host takes by servicing: spec.firmware only with a
 * HostUpdatePolicy whose firmwareSettings is onReboot, as BMO (BMO services no RAID: spec.raid waits),
 * and the held HostFirmwareSettings / HostFirmwareComponents change as the policy allows (firmware-held.ts).
 */
export function serviceableSettings(s: HostState): CleanStep[] {
  if (!s.updatePolicy || s.status.provisioning.state !== 'provisioned') return [];
  const spec = pendingSettingsSteps(s.spec, s.status).filter((step) => servicingAllows(s.updatePolicy, step.name));
  return withHeld(heldServiceable(s), spec);
}

/** BMO services when the host comes back on (its reboot's power off done, spec.online true): a pending reboot or power on. */
function rebootDue(s: HostState): boolean {
  if (!s.spec) return false;
  const goal = powerGoal(s.status.poweredOn, s.spec, s.power);
  return goal.action === 'reboot' || (goal.action === 'power' && goal.on);
}

/** Why one changed setting waits on a provisioned host (its policy, or the reboot it waits for). */
function heldOnProvisioned(s: HostState, field: 'spec.raid' | 'spec.firmware'): string {
  const at = `${field} changed while the host is provisioned`;
  if (field === 'spec.raid') return `${at}: RAID is not applied by servicing (as in Metal3, it is built only while preparing)`;
  const policy = s.updatePolicy?.firmwareSettings;
  if (policy === 'onReboot') return `${at}: applied by servicing at the host's next reboot (HostUpdatePolicy firmwareSettings: onReboot); reboot it to apply now`;
  const has = policy ? `firmwareSettings is ${policy}` : s.updatePolicy ? 'firmwareSettings is not set' : 'the host has none';
  return `${at}: applied to a provisioned host only by servicing, which needs a HostUpdatePolicy with firmwareSettings: onReboot (${has})`;
}

/** Why changed spec.raid / spec.firmware, or a held firmware change, wait, or undefined. */
export function settingsHeld(s: HostState): string | undefined {
  const reasons = [specSettingsHeld(s), firmwareHeldReason(s)].filter((r) => r !== undefined);
  return reasons.length > 0 ? reasons.join('; ') : undefined;
}

/** Why changed spec.raid / spec.firmware wait (never applied on a host that is provisioning; on a provisioned one by policy), or undefined. */
function specSettingsHeld(s: HostState): string | undefined {
  const state = s.status.provisioning.state;
  if (!HELD_STATES.includes(state)) return undefined;
  const pending = pendingSettingsSteps(s.spec, s.status).map((step) => (step.name === 'raid' ? ('spec.raid' as const) : ('spec.firmware' as const)));
  if (pending.length === 0) return undefined;
  const deprovision = 'or deprovision it (remove the image) to apply at the next preparing';
  if (state === 'provisioned') return `${pending.map((f) => heldOnProvisioned(s, f)).join('; ')}; ${deprovision}`;
  return `${pending.join(' and ')} changed while the host is ${state}: applied only while preparing or, on a provisioned host, by servicing as its HostUpdatePolicy allows; ${deprovision}`;
}

/** A provisioned host's servicing is due: a clean request its policy allowed, or spec.firmware at a reboot. */
export function serviceDue(s: HostState): boolean {
  if (!s.updatePolicy) return false;
  if (s.cleanRequest) return true;
  return serviceableSettings(s).length > 0 && rebootDue(s);
}
