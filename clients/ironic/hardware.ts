/**
 * Maps what Ironic learned about a machine (its stored inventory, or failing
 * that the node's scheduling properties) onto Metal3's `status.hardware`.
 */
import type { HardwareDetails } from '../../model/host';

type Json = Record<string, unknown>;

const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const arr = (v: unknown): Json[] => (Array.isArray(v) ? v.map(obj) : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const num = (v: unknown): number | undefined => {
  const n = typeof v === 'string' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) ? n : undefined;
};

/** Drops undefined members so the status stays minimal and schema-valid. */
function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

export function hardwareFromInventory(inventory: Json): HardwareDetails {
  const cpu = obj(inventory.cpu);
  const memory = obj(inventory.memory);
  const vendor = obj(inventory.system_vendor);
  const firmware = obj(vendor.firmware);
  const hw: HardwareDetails = {
    cpu: compact({
      arch: str(cpu.architecture),
      model: str(cpu.model_name),
      clockMegahertz: num(cpu.frequency),
      count: num(cpu.count),
      flags: Array.isArray(cpu.flags) ? cpu.flags.filter((f): f is string => typeof f === 'string') : undefined,
    }),
    ramMebibytes: num(memory.physical_mb) ?? (num(memory.total) ? Math.round(num(memory.total)! / 2 ** 20) : undefined),
    nics: arr(inventory.interfaces).map((nic) =>
      compact({
        name: str(nic.name),
        mac: str(nic.mac_address)?.toLowerCase(),
        ip: str(nic.ipv4_address) ?? str(nic.ipv6_address),
        model: [str(nic.vendor), str(nic.product)].filter(Boolean).join(' ') || undefined,
        speedGbps: num(nic.speed_mbps) ? Math.floor(num(nic.speed_mbps)! / 1000) : undefined,
      }),
    ),
    storage: arr(inventory.disks).map((disk) =>
      compact({
        name: str(disk.name),
        model: str(disk.model),
        vendor: str(disk.vendor),
        serialNumber: str(disk.serial),
        sizeBytes: num(disk.size),
        rotational: typeof disk.rotational === 'boolean' ? disk.rotational : undefined,
        wwn: str(disk.wwn),
        hctl: str(disk.hctl),
      }),
    ),
    systemVendor: compact({
      manufacturer: str(vendor.manufacturer),
      productName: str(vendor.product_name),
      serialNumber: str(vendor.serial_number),
    }),
    firmware: {
      bios: compact({ vendor: str(firmware.vendor), version: str(firmware.version), date: str(firmware.build_date) }),
    },
    hostname: str(inventory.hostname),
  };
  return compact(hw);
}

/** Out-of-band inspection without a stored inventory only fills the node's properties. */
export function hardwareFromProperties(properties: Json): HardwareDetails {
  const memoryMb = num(properties.memory_mb);
  const cpus = num(properties.cpus);
  const arch = str(properties.cpu_arch);
  const localGb = num(properties.local_gb);
  const hw: HardwareDetails = {};
  if (cpus !== undefined || arch !== undefined) hw.cpu = compact({ count: cpus, arch });
  if (memoryMb !== undefined) hw.ramMebibytes = memoryMb;
  if (localGb !== undefined && localGb > 0) hw.storage = [{ sizeBytes: localGb * 2 ** 30 }];
  return hw;
}
