/**
 * spec.disablePowerOff on the node itself:
 * where Ironic has the node field `disable_power_off` (API 1.95), registration
 * sets it (activities/ironic/register.ts), as BMO does, so Ironic itself never
 * powers the node off; a changed value registers the host again. The
 * workflow's own rule (no power-off step for such a host) stays, for an older
 * Ironic and for the direct provisioner.
 */
import type { HostState } from '../../../contracts/host';
import { provisionerTraits } from '../provisioners/traits';

/** The spec's disablePowerOff is not what the node was registered with (a host registered before: only when set). */
export function disablePowerOffStale(s: HostState): boolean {
  const spec = s.spec;
  if (s.registered === undefined || !spec?.bmc || !provisionerTraits(spec).ironicNode) return false;
  const want = spec.disablePowerOff === true;
  return s.registeredDisablePowerOff === undefined ? want : s.registeredDisablePowerOff !== want;
}
