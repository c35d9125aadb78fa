/**
 * metalflow's named clean steps in Ironic's wire format: the `clean_steps`
 * of a manual clean, and the node's `target_raid_config` the RAID step
 * builds from. Pure translation, kept apart from the I/O that sends it.
 */
import type { CleanStep, FirmwareConfig, RaidConfig } from '../../model/clean';

export interface IronicCleanStep {
  interface: 'deploy' | 'raid' | 'bios' | 'firmware';
  step: string;
  args?: Record<string, unknown>;
}

export interface IronicLogicalDisk {
  size_gb: number | 'MAX';
  raid_level: string;
  is_root_volume?: boolean;
  volume_name?: string;
  number_of_physical_disks?: number;
  physical_disks?: string[];
  disk_type?: 'hdd' | 'ssd';
  controller?: string;
}

/**
 * Metal3's `spec.firmware` flags as BIOS attribute names. Vendors name them
 * differently (BMO keeps a table per BMC type); these are the Dell iDRAC
 * names, which the `settings` map can override or extend by the BMC's own names.
 */
const FIRMWARE_ATTRIBUTES: Record<keyof FirmwareConfig, string> = {
  simultaneousMultithreadingEnabled: 'LogicalProc',
  sriovEnabled: 'SriovGlobalEnable',
  virtualizationEnabled: 'ProcVirtualization',
};

export function biosSettings(step: { firmware?: FirmwareConfig; settings?: Record<string, string> }): { name: string; value: string }[] {
  const out = new Map<string, string>();
  for (const [key, on] of Object.entries(step.firmware ?? {}) as [keyof FirmwareConfig, boolean | undefined][]) {
    if (on !== undefined) out.set(FIRMWARE_ATTRIBUTES[key], on ? 'Enabled' : 'Disabled');
  }
  for (const [name, value] of Object.entries(step.settings ?? {})) out.set(name, value);
  return [...out].map(([name, value]) => ({ name, value }));
}

/** Ironic's target_raid_config for Metal3's spec.raid; the first volume is the root volume, as BMO builds it. */
export function targetRaidConfig(raid: RaidConfig): { logical_disks: IronicLogicalDisk[] } {
  if (raid.softwareRAIDVolumes) {
    return {
      logical_disks: raid.softwareRAIDVolumes.map((v, i) => ({
        size_gb: v.sizeGibibytes ?? 'MAX',
        raid_level: v.level,
        controller: 'software',
        ...(i === 0 ? { is_root_volume: true } : {}),
      })),
    };
  }
  return {
    logical_disks: (raid.hardwareRAIDVolumes ?? []).map((v, i) => ({
      size_gb: v.sizeGibibytes ?? 'MAX',
      raid_level: v.level,
      ...(i === 0 ? { is_root_volume: true } : {}),
      ...(v.name !== undefined ? { volume_name: v.name } : {}),
      ...(v.numberOfPhysicalDisks !== undefined ? { number_of_physical_disks: v.numberOfPhysicalDisks } : {}),
      ...(v.physicalDisks !== undefined ? { physical_disks: v.physicalDisks } : {}),
      ...(v.rotational !== undefined ? { disk_type: v.rotational ? ('hdd' as const) : ('ssd' as const) } : {}),
      ...(v.controller !== undefined ? { controller: v.controller } : {}),
    })),
  };
}

/** The Ironic clean steps one named step runs, in order. */
export function ironicCleanSteps(step: CleanStep): IronicCleanStep[] {
  switch (step.name) {
    case 'erase-metadata':
      return [{ interface: 'deploy', step: 'erase_devices_metadata', args: {} }];
    case 'erase-full':
      return [{ interface: 'deploy', step: 'erase_devices', args: {} }];
    case 'raid':
      return [
        { interface: 'raid', step: 'delete_configuration', args: {} },
        { interface: 'raid', step: 'create_configuration', args: {} },
      ];
    case 'bios':
      return [{ interface: 'bios', step: 'apply_configuration', args: { settings: biosSettings(step) } }];
    case 'firmware':
      // Ironic's firmware interface (redfish): its `update` step takes the images as `settings`.
      return [{ interface: 'firmware', step: 'update', args: { settings: step.updates.map((u) => ({ component: u.component, url: u.url })) } }];
  }
}

const asDisks = (v: unknown): Record<string, unknown>[] | undefined => {
  const disks = (v as { logical_disks?: unknown } | null | undefined)?.logical_disks;
  return Array.isArray(disks) && disks.every((d) => typeof d === 'object' && d !== null) ? (disks as Record<string, unknown>[]) : undefined;
};

/**
 * Whether the node's `raid_config` (what its RAID interface last built) already has the volumes
 * `desired` asks for, in order. A field left out of the desired volume matches whatever was built;
 * a `MAX` size matches any size (Ironic records the size it got). Ironic reports sizes in GiB.
 */
export function raidConfigMatches(current: unknown, desired: { logical_disks: IronicLogicalDisk[] }): boolean {
  const built = asDisks(current);
  if (!built || built.length !== desired.logical_disks.length) return false;
  return desired.logical_disks.every((want, i) => {
    const have = built[i]!;
    if (String(have.raid_level) !== want.raid_level) return false;
    if (want.size_gb !== 'MAX' && Number(have.size_gb) !== want.size_gb) return false;
    if (Boolean(have.is_root_volume) !== Boolean(want.is_root_volume)) return false;
    const optional = ['volume_name', 'number_of_physical_disks', 'disk_type', 'controller'] as const;
    if (optional.some((k) => want[k] !== undefined && have[k] !== want[k])) return false;
    if (want.physical_disks && JSON.stringify(have.physical_disks) !== JSON.stringify(want.physical_disks)) return false;
    return true;
  });
}
