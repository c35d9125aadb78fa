/**
 * Power steps of the operation workflows: power changes and reboots routed to
 * whoever owns the host's power (Ironic for nodes it manages, the BMC
 * otherwise), and fast out-of-band inspection from the BMC.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { HardwareDetails, HostRef, HostSpec } from '../../../model/host';
import { ACTIVITY_OPTIONS } from '../../common/activity-options';
import type { BmcActivities } from '../../../activities/bmc/activities';
import type { PowerActivities, PowerPath } from '../../../activities/power/activities';
import type { RebootMode } from '../rules/power-requests';
import { provisionerTraits } from './traits';

export type { PowerPath } from '../../../activities/power/activities';

/** What a `power` or `reboot` operation decided in a steady state is to do. */
export interface PowerOrder {
  on: boolean;
  /** Soft: shut down, hard if that fails within softTimeoutSeconds. Absent: hard. */
  mode?: RebootMode;
  via: PowerPath;
  softTimeoutSeconds: number;
}

/** Who owns the host's power: Ironic when it manages the node, the BMC itself otherwise. */
export function powerPath(spec: HostSpec | undefined, nodeId: string | undefined): PowerPath {
  return !provisionerTraits(spec).ironicNode || !nodeId ? 'bmc' : 'ironic';
}

/**
 * Through Ironic, transient faults (Ironic restarting, 5xx, 409) are retried
 * quietly like every other Ironic call, about five minutes. With the BMC's five
 * attempts (~15 s) an Ironic restart failed a reboot half done, and the next
 * reboot operation powered the host off a second time (the chaos suite).
 */
const ironicPower = (o: PowerOrder) => proxyActivities<PowerActivities>(ACTIVITY_OPTIONS.ironicPower(o.softTimeoutSeconds));
const bmcPower = (o: PowerOrder) => proxyActivities<BmcActivities>(ACTIVITY_OPTIONS.bmcPower(o.softTimeoutSeconds));

/** Out-of-band inventory: a dozen or more requests to the BMC (each up to 30 s on a slow one), heartbeating. */
const inventory = proxyActivities<BmcActivities>(ACTIVITY_OPTIONS.bmcCall);

export interface PowerStepInput {
  ref: HostRef;
  spec?: HostSpec;
  nodeId?: string;
  power: PowerOrder;
}

function need<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`operation started without ${what}`);
  return value;
}

/** Power on, or off (soft first when asked), through the path that owns the host. */
export async function changePower(input: PowerStepInput): Promise<{ poweredOn: boolean }> {
  const o = input.power;
  if (o.via === 'bmc') {
    const spec = need(input.spec, 'a spec');
    const r = await bmcPower(o).setBmcPower({ ref: input.ref, spec, on: o.on, mode: o.mode, softTimeoutMs: o.softTimeoutSeconds * 1000 });
    return { poweredOn: r.poweredOn };
  }
  const r = await ironicPower(o).changeNodePower({
    ref: input.ref,
    nodeId: need(input.nodeId, 'a node'),
    action: o.on ? 'on' : 'off',
    mode: o.mode,
    softTimeoutSeconds: o.softTimeoutSeconds,
  });
  return { poweredOn: r.poweredOn };
}

/**
 * One-shot reboot: Ironic's `soft rebooting` / `rebooting` for nodes it manages; off (soft
 * first unless hard) then on through the BMC otherwise. A host whose spec says offline is
 * only powered off.
 */
export async function reboot(input: PowerStepInput): Promise<{ poweredOn: boolean }> {
  const o = input.power;
  const mode = o.mode ?? 'soft';
  if (!o.on) return changePower({ ...input, power: { ...o, mode } });
  if (o.via === 'ironic') {
    const r = await ironicPower(o).changeNodePower({
      ref: input.ref,
      nodeId: need(input.nodeId, 'a node'),
      action: 'reboot',
      mode,
      softTimeoutSeconds: o.softTimeoutSeconds,
      ...(input.spec?.disablePowerOff ? { inPlace: true } : {}),
    });
    return { poweredOn: r.poweredOn };
  }
  await changePower({ ...input, power: { ...o, on: false, mode } });
  return changePower({ ...input, power: { ...o, on: true } });
}

/** Metal3's inspectionMode fast: the inventory read from the (Redfish) BMC in seconds, no agent boot. */
export async function inspectFromBmc(input: { ref: HostRef; spec: HostSpec }): Promise<{ hardware: HardwareDetails }> {
  return inventory.inspectBmc({ ref: input.ref, spec: input.spec });
}
