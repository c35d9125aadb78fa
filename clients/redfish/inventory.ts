/**
 * Maps Redfish resources (ComputerSystem, Processors, Memory,
 * EthernetInterfaces, Storage drives or SimpleStorage devices) onto Metal3's
 * `status.hardware`, the same shape `clients/ironic/hardware.ts` fills
 * from an Ironic inventory. Pure: the client fetches, this only maps.
 */
import type { HardwareDetails } from '../../model/host';
import { arr, obj, str, type Json } from './http';

export interface RedfishInventorySources {
  system: Json;
  processors: Json[];
  memory: Json[];
  ethernetInterfaces: Json[];
  /** Drive resources of every Storage member. */
  drives: Json[];
  /** SimpleStorage resources (used when there are no Storage drives). */
  simpleStorage: Json[];
}

type Nic = NonNullable<HardwareDetails['nics']>[number];
type Disk = NonNullable<HardwareDetails['storage']>[number];

const num = (v: unknown): number | undefined => {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) ? n : undefined;
};

const state = (r: Json): string | undefined => str(obj(r.Status).State);
const present = (r: Json): boolean => state(r) !== 'Absent';

function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

const nonEmpty = <T extends object>(value: T): T | undefined => (Object.keys(value).length > 0 ? value : undefined);

/** Redfish InstructionSet / ProcessorArchitecture to the names Linux (and Ironic) use. */
export function cpuArch(processor: Json): string | undefined {
  const byInstructionSet: Record<string, string> = {
    'x86-64': 'x86_64',
    x86: 'i686',
    'IA-64': 'ia64',
    'ARM-A64': 'aarch64',
    'ARM-A32': 'armv7l',
    MIPS64: 'mips64',
    MIPS32: 'mips',
    PowerISA: 'ppc64le',
    RV64: 'riscv64',
    RV32: 'riscv32',
  };
  const byArchitecture: Record<string, string> = {
    x86: 'x86_64',
    'IA-64': 'ia64',
    ARM: 'aarch64',
    MIPS: 'mips',
    Power: 'ppc64le',
    'RISC-V': 'riscv64',
  };
  const is = str(processor.InstructionSet);
  if (is && byInstructionSet[is]) return byInstructionSet[is];
  const pa = str(processor.ProcessorArchitecture);
  return pa ? byArchitecture[pa] : undefined;
}

function nicFrom(eth: Json): Nic | undefined {
  const mac = (str(eth.MACAddress) ?? str(eth.PermanentMACAddress))?.toLowerCase();
  if (!mac) return undefined;
  const ipv4 = arr(eth.IPv4Addresses)
    .map((a) => str(obj(a).Address))
    .find((a) => a !== undefined && a !== '0.0.0.0');
  const speed = num(eth.SpeedMbps);
  return compact({
    name: str(eth.Id) ?? str(eth.Name),
    mac,
    ip: ipv4,
    speedGbps: speed === undefined ? undefined : Math.floor(speed / 1000),
  });
}

function diskFromDrive(drive: Json): Disk {
  const media = str(drive.MediaType);
  const rpm = num(drive.RotationSpeedRPM);
  const protocol = str(drive.Protocol);
  const rotational = media === 'HDD' ? true : media === 'SSD' ? false : rpm !== undefined ? rpm > 0 : undefined;
  const type = protocol === 'NVMe' ? 'NVME' : media === 'SSD' ? 'SSD' : media === 'HDD' ? 'HDD' : undefined;
  const wwn = arr(drive.Identifiers)
    .map(obj)
    .find((i) => ['NAA', 'EUI', 'NGUID'].includes(str(i.DurableNameFormat) ?? ''));
  return compact({
    name: str(drive.Name) ?? str(drive.Id),
    sizeBytes: num(drive.CapacityBytes),
    model: str(drive.Model),
    vendor: str(drive.Manufacturer),
    serialNumber: str(drive.SerialNumber),
    rotational,
    type,
    wwn: wwn ? str(wwn.DurableName) : undefined,
  });
}

function disksFromSimpleStorage(resource: Json): Disk[] {
  return arr(resource.Devices)
    .map(obj)
    .filter(present)
    .filter((d) => num(d.CapacityBytes) !== undefined)
    .map((d) =>
      compact({
        name: str(d.Name),
        sizeBytes: num(d.CapacityBytes),
        model: str(d.Model),
        vendor: str(d.Manufacturer),
      }),
    );
}

export function hardwareFromRedfish(src: RedfishInventorySources): HardwareDetails {
  const sys = src.system;

  const cpus = src.processors.filter(present).filter((p) => (str(p.ProcessorType) ?? 'CPU') === 'CPU');
  const first = cpus[0] ?? {};
  const threads = cpus.map((p) => num(p.TotalThreads) ?? num(p.TotalCores)).filter((n): n is number => n !== undefined);
  const summary = obj(sys.ProcessorSummary);
  const cpuCount =
    threads.length > 0 ? threads.reduce((a, b) => a + b, 0) : (num(summary.LogicalProcessorCount) ?? num(summary.Count));
  const cpu = nonEmpty(
    compact({
      arch: cpuArch(first),
      model: str(first.Model) ?? str(summary.Model),
      clockMegahertz: num(first.MaxSpeedMHz) ?? num(first.OperatingSpeedMHz),
      count: cpuCount,
    }),
  );

  const dimms = src.memory
    .filter(present)
    .filter((m) => (str(m.MemoryType) ?? 'DRAM') === 'DRAM')
    .map((m) => num(m.CapacityMiB))
    .filter((n): n is number => n !== undefined);
  const dimmTotal = dimms.reduce((a, b) => a + b, 0);
  const summaryGiB = num(obj(sys.MemorySummary).TotalSystemMemoryGiB);
  const ramMebibytes = dimmTotal > 0 ? dimmTotal : summaryGiB !== undefined ? Math.round(summaryGiB * 1024) : undefined;

  const seen = new Set<string>();
  const nics: Nic[] = [];
  for (const eth of src.ethernetInterfaces) {
    if (!present(eth) || str(eth.EthernetInterfaceType) === 'Virtual') continue;
    const nic = nicFrom(eth);
    if (!nic?.mac || seen.has(nic.mac)) continue;
    seen.add(nic.mac);
    nics.push(nic);
  }

  const drives = src.drives.filter(present).map(diskFromDrive);
  const storage = drives.length > 0 ? drives : src.simpleStorage.flatMap(disksFromSimpleStorage);

  const hw: HardwareDetails = {
    cpu,
    ramMebibytes,
    nics,
    storage,
    systemVendor: nonEmpty(
      compact({
        manufacturer: str(sys.Manufacturer),
        productName: str(sys.Model),
        serialNumber: str(sys.SerialNumber),
      }),
    ),
    firmware: str(sys.BiosVersion) ? { bios: { version: str(sys.BiosVersion) } } : undefined,
    hostname: str(sys.HostName),
  };
  return compact(hw);
}
