/**
 * What a host's spec asks of its Ironic node: hardware type, interfaces,
 * properties. Pure translation, kept apart from the I/O that applies it.
 */
import { BMC_TYPE_TABLE, type BmcAccess, type IronicInterfaces } from '../../model/bmc';
import type { HostSpec, RootDeviceHints } from '../../model/host';

/** Ironic's root device hint names for Metal3's fields. */
export function ironicRootDeviceHints(hints: RootDeviceHints | undefined): Record<string, unknown> | undefined {
  if (!hints) return undefined;
  const out: Record<string, unknown> = {};
  // A by-path link is matched by Ironic's own by_path hint (as Metal3 sends it), not as a device name.
  if (hints.deviceName !== undefined) out[hints.deviceName.startsWith('/dev/disk/by-path/') ? 'by_path' : 'name'] = `s== ${hints.deviceName}`;
  if (hints.hctl !== undefined) out.hctl = `s== ${hints.hctl}`;
  if (hints.model !== undefined) out.model = `<in> ${hints.model}`;
  if (hints.vendor !== undefined) out.vendor = `<in> ${hints.vendor}`;
  if (hints.serialNumber !== undefined) out.serial = `s== ${hints.serialNumber}`;
  if (hints.minSizeGigabytes !== undefined) out.size = `>= ${hints.minSizeGigabytes}`;
  if (hints.wwn !== undefined) out.wwn = `s== ${hints.wwn}`;
  if (hints.wwnWithExtension !== undefined) out.wwn_with_extension = `s== ${hints.wwnWithExtension}`;
  if (hints.wwnVendorExtension !== undefined) out.wwn_vendor_extension = `s== ${hints.wwnVendorExtension}`;
  if (hints.rotational !== undefined) out.rotational = hints.rotational;
  return Object.keys(out).length > 0 ? out : undefined;
}

export function bootCapabilities(spec: HostSpec): string {
  switch (spec.bootMode ?? 'UEFI') {
    case 'legacy':
      return 'boot_mode:bios';
    case 'UEFISecureBoot':
      return 'boot_mode:uefi,secure_boot:true';
    case 'UEFI':
      return 'boot_mode:uefi';
  }
}

export type InspectionPreference = 'agent' | 'out-of-band';

/**
 * The node's interfaces: the capability table's choice where this Ironic has
 * it enabled, otherwise left to Ironic's default for the hardware type (the
 * key is omitted). Out-of-band inspection is preferred when configured and
 * the BMC type has it, since it needs no agent ramdisk.
 */
export function nodeInterfaces(
  access: BmcAccess,
  enabled: Record<string, unknown>,
  inspection: InspectionPreference,
): Record<string, string> {
  const wanted: IronicInterfaces = { ...access.interfaces };
  const oob = BMC_TYPE_TABLE[access.type].outOfBandInspect;
  if (inspection === 'out-of-band' && oob) wanted.inspect = oob;
  const out: Record<string, string> = {};
  for (const [kind, name] of Object.entries(wanted) as [string, string | undefined][]) {
    if (!name) continue;
    const list = enabled[`enabled_${kind}_interfaces`];
    if (Array.isArray(list) && list.includes(name)) out[`${kind}_interface`] = name;
  }
  return out;
}
