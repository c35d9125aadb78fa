/** What both drivers share: the hosts, the phases, a bounded pool and percentiles. */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';

export const PHASES = ['available', 'provisioned', 'deprovisioned', 'gone'] as const;
export type Phase = (typeof PHASES)[number];

export const PHASE_LABEL: Record<Phase, string> = {
  available: 'create -> available',
  provisioned: 'provision -> provisioned',
  deprovisioned: 'deprovision -> available',
  gone: 'delete -> gone',
};

export interface BenchHost {
  index: number;
  name: string;
  bmcAddress: string;
  mac: string;
  userData: string;
  /** `--sites N`: the site the host belongs to (`spec.site`; bench/sites.ts); absent: the default site. */
  site?: string;
}

/** The image a host is provisioned with: fake-hardware never reads it; the agent path serves one (bench/agent-stack.ts). */
export interface BenchImage {
  url: string;
  checksum: string;
  checksumType: 'sha256';
  format: 'qcow2';
}

export const IMAGE: BenchImage = {
  url: 'http://127.0.0.1/images/bench-ubuntu-24.04.qcow2',
  checksum: '9f0cc3d3b2f35dd1c8dc8a9c76c5c3f7b1a2f2c4a1d4e2b7a0c8f6e5d4c3b2a1',
  checksumType: 'sha256',
  format: 'qcow2',
};

export const CREDENTIALS = { username: 'admin', password: 'password' };

/**
 * Hosts of one run: names, fake BMC addresses and boot MACs unique to the run. With `redfishSystems`, each
 * host's BMC is its sushy-tools system, as `redfish+` (the default) or `redfish-virtualmedia+` (the agent path).
 */
export function makeHosts(
  n: number,
  opts: { redfishSystems?: { id: string; mac: string }[]; sushyUrl?: string; bmcScheme?: 'redfish' | 'redfish-virtualmedia' } = {},
): BenchHost[] {
  const r = randomBytes(3);
  const hex = (x: number): string => x.toString(16).padStart(2, '0');
  return Array.from({ length: n }, (_, index) => {
    const name = `h-${String(index).padStart(4, '0')}`;
    const system = opts.redfishSystems?.[index];
    return {
      index,
      name,
      bmcAddress: system ? `${opts.bmcScheme ?? 'redfish'}+${opts.sushyUrl}/redfish/v1/Systems/${system.id}` : `fake://${name}`,
      mac: system ? system.mac : ['52', hex(r[0]!), hex(r[1]!), hex(r[2]!), hex(index >> 8), hex(index & 0xff)].join(':'),
      userData: `#cloud-config\nhostname: ${name}\n`,
    };
  });
}

export interface SushySystem {
  id: string;
  mac: string;
}

/**
 * A sushy-tools fake systems file (scripts/stack.sh's SUSHY_SYSTEMS_FILE) with
 * `n` systems, off, one NIC each; ids `<uuidPrefix>-0000-4000-8000-<index>`.
 * `externalNotifier`: sushy tells the agent launcher of every change (the agent
 * path), and `diskBytes` the size of the one disk (480 GB unless given).
 */
export function writeSushySystems(
  file: string,
  n: number,
  names: { uuidPrefix: string; macPrefix: string; namePrefix: string; externalNotifier?: boolean; diskBytes?: number },
): SushySystem[] {
  const hex = (x: number): string => x.toString(16).padStart(2, '0');
  const systems = Array.from({ length: n }, (_, i) => ({
    id: `${names.uuidPrefix}-0000-4000-8000-${String(i).padStart(12, '0')}`,
    mac: `${names.macPrefix}:${hex(i >> 8)}:${hex(i & 0xff)}`,
  }));
  writeFileSync(
    file,
    JSON.stringify(
      systems.map((s, i) => ({
        uuid: s.id,
        name: `${names.namePrefix}-${i}`,
        power_state: 'Off',
        external_notifier: names.externalNotifier ?? false,
        nics: [{ mac: s.mac, ip: `192.0.2.${(i % 250) + 1}` }],
        memory_gb: 32,
        processors: { sockets: 1, model: 'Bench CPU', vendor: 'Bench', cores: 8, threads: 16 },
        disks: [{ id: 'Disk0', name: 'sda', capacity_bytes: names.diskBytes ?? 480103981056, protocol: 'SATA' }],
      })),
    ),
  );
  return systems;
}

/** Runs `fn` over every item with at most `concurrency` in flight. */
export async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const errors: unknown[] = [];
  const lane = async (): Promise<void> => {
    while (next < items.length && errors.length === 0) {
      const item = items[next++]!;
      try {
        await fn(item);
      } catch (err) {
        errors.push(err);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, lane));
  if (errors.length > 0) throw errors[0];
}

export interface Percentiles {
  n: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentiles (ms values in, same unit out). */
export function percentiles(values: number[]): Percentiles | undefined {
  if (values.length === 0) return undefined;
  const s = [...values].sort((a, b) => a - b);
  const at = (p: number): number => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
  return { n: s.length, p50: at(50), p95: at(95), p99: at(99), max: s[s.length - 1]!, mean: s.reduce((a, b) => a + b, 0) / s.length };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
