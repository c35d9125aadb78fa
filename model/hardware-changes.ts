/**
 * What changed between two inspections of one host (Metal3's
 * `status.hardware` / HardwareData), in words a remediation's failure can
 * name: memory (a missing DIMM shows as less of it), CPU count, disks (by
 * serial, else WWN, else name, else position) and NICs (by MAC, else name).
 * Pure: the remediation workflow calls it on the two readings.
 */
import type { HardwareDetails } from './host';

type Disk = NonNullable<HardwareDetails['storage']>[number];
type Nic = NonNullable<HardwareDetails['nics']>[number];

const GIB = 2 ** 30;
const size = (bytes: number | undefined): string => (bytes === undefined ? 'unknown size' : bytes >= GIB ? `${Math.round((bytes / GIB) * 10) / 10} GiB` : `${bytes} B`);

const diskKey = (d: Disk, i: number): string =>
  d.serialNumber ? `serial ${d.serialNumber}` : d.wwn ? `WWN ${d.wwn}` : d.name ? `name ${d.name}` : `#${i + 1}`;
const diskName = (d: Disk, i: number): string => {
  const what = [d.name, d.serialNumber ? `serial ${d.serialNumber}` : undefined, d.model].filter(Boolean).join(', ');
  return `disk ${what || `#${i + 1}`} (${size(d.sizeBytes)})`;
};
const nicKey = (n: Nic, i: number): string => (n.mac ? `mac ${n.mac}` : n.name ? `name ${n.name}` : `#${i + 1}`);
const nicName = (n: Nic, i: number): string => `NIC ${[n.name, n.mac].filter(Boolean).join(' ') || `#${i + 1}`}`;

/** Items of `before` missing from `after`, and new ones, matched by key. */
function compareSets<T>(before: readonly T[], after: readonly T[], key: (t: T, i: number) => string, name: (t: T, i: number) => string, same: (a: T, b: T) => string | undefined): string[] {
  const out: string[] = [];
  const was = new Map(before.map((t, i) => [key(t, i), { t, i }]));
  const now = new Map(after.map((t, i) => [key(t, i), { t, i }]));
  for (const [k, { t, i }] of was) {
    const found = now.get(k);
    if (!found) out.push(`${name(t, i)} missing`);
    else {
      const changed = same(t, found.t);
      if (changed) out.push(`${name(t, i)}: ${changed}`);
    }
  }
  for (const [k, { t, i }] of now) if (!was.has(k)) out.push(`${name(t, i)} new`);
  return out;
}

/** The differences, one phrase each, in a stable order; empty when nothing a remediation cares about changed. */
export function hardwareChanges(before: HardwareDetails | undefined, after: HardwareDetails | undefined): string[] {
  if (!before) return after ? [] : ['no hardware details from either inspection'];
  if (!after) return ['the re-inspection found no hardware details'];
  const out: string[] = [];
  const ram = [before.ramMebibytes, after.ramMebibytes];
  if (ram[0] !== ram[1]) {
    const less = ram[0] !== undefined && ram[1] !== undefined && ram[1] < ram[0] ? ` (${ram[0] - ram[1]} MiB less: a missing or failed DIMM?)` : '';
    out.push(`memory ${ram[0] ?? 'unknown'} MiB → ${ram[1] ?? 'unknown'} MiB${less}`);
  }
  if (before.cpu?.count !== after.cpu?.count) out.push(`CPU count ${before.cpu?.count ?? 'unknown'} → ${after.cpu?.count ?? 'unknown'}`);
  const disks = [before.storage ?? [], after.storage ?? []] as const;
  if (disks[0].length !== disks[1].length) out.push(`disks ${disks[0].length} → ${disks[1].length}`);
  out.push(...compareSets(disks[0], disks[1], diskKey, diskName, (a, b) => (a.sizeBytes !== b.sizeBytes ? `size ${size(a.sizeBytes)} → ${size(b.sizeBytes)}` : undefined)));
  const nics = [before.nics ?? [], after.nics ?? []] as const;
  if (nics[0].length !== nics[1].length) out.push(`NICs ${nics[0].length} → ${nics[1].length}`);
  out.push(...compareSets(nics[0], nics[1], nicKey, nicName, (a, b) => (a.speedGbps !== b.speedGbps ? `speed ${a.speedGbps ?? '?'} → ${b.speedGbps ?? '?'} Gbps` : undefined)));
  return out;
}
