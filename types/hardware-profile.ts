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
  const name = spec.hardwareProfile ?? DEFAULT_HARDWARE_PROFILE;
  const hints = Object.hasOwn(HARDWARE_PROFILES, name) ? HARDWARE_PROFILES[name] : undefined;
  if (!hints) {
    return { error: `spec.hardwareProfile: no hardware profile named "${name}" (known: ${Object.keys(HARDWARE_PROFILES).join(', ')}); or give spec.rootDeviceHints` };
  }
  return { hints };
}
