/**
 * Metal3's hardware profiles (deprecated in Metal3, but still what picks a
 * host's root disk when `spec.rootDeviceHints` is not given): each names the
 * root device hints of one class of machine. A host without
 * `spec.hardwareProfile` uses `unknown`, i.e. `/dev/sda`; `empty` gives no
 * hint at all (Ironic then picks the smallest disk of at least 4 GiB). An
 * unknown name is a registration error, as in Metal3.
 */
import type { HostSpec, RootDeviceHints } from './host';

export const DEFAULT_HARDWARE_PROFILE = 'unknown';

export const HARDWARE_PROFILES: Readonly<Record<string, RootDeviceHints>> = {
  [DEFAULT_HARDWARE_PROFILE]: { deviceName: '/dev/sda' },
  libvirt: { deviceName: '/dev/vda' },
  dell: { hctl: '0:0:0:0' },
  'dell-raid': { hctl: '0:2:0:0' },
  openstack: { deviceName: '/dev/vdb' },
  empty: {},
};

/**
 * The root device hints the host's node gets: the spec's own when given (even
 * empty: then none), else its hardware profile's; or why there are none.
 */
export function effectiveRootDeviceHints(spec: HostSpec): { hints: RootDeviceHints } | { error: string } {
  if (spec.rootDeviceHints) return { hints: spec.rootDeviceHints };
  const name = hardwareProfileName(spec);
  const hints = Object.hasOwn(HARDWARE_PROFILES, name) ? HARDWARE_PROFILES[name] : undefined;
  if (!hints) {
    return { error: `spec.hardwareProfile: no hardware profile named "${name}" (known: ${Object.keys(HARDWARE_PROFILES).join(', ')}); or give spec.rootDeviceHints` };
  }
  return { hints };
}

/**
 * The profile a host uses, as BMO's getHardwareProfileName picks it: the spec's; else `libvirt` for
 * a `libvirt://` BMC (VirtualBMC VMs, whose disks are virtio: `/dev/vda`); else `unknown`.
 */
export function hardwareProfileName(spec: { hardwareProfile?: string; bmc?: { address?: string } }): string {
  if (spec.hardwareProfile) return spec.hardwareProfile;
  if (spec.bmc?.address?.startsWith('libvirt')) return 'libvirt';
  return DEFAULT_HARDWARE_PROFILE;
}

/** Whether Metal3 knows the profile (an unknown one is a registration error). */
export const isHardwareProfile = (name: string): boolean => Object.hasOwn(HARDWARE_PROFILES, name);

