/** What a re-inspection names against the hardware recorded before (model/hardware-changes.ts). */
import { describe, expect, it } from 'vitest';
import { hardwareChanges } from '../../model/hardware-changes';
import type { HardwareDetails } from '../../model/host';

const GIB = 2 ** 30;
const before: HardwareDetails = {
  cpu: { count: 32, arch: 'x86_64' },
  ramMebibytes: 65_536,
  storage: [
    { name: '/dev/sda', serialNumber: 'S1', sizeBytes: 480 * GIB },
    { name: '/dev/sdb', serialNumber: 'S2', sizeBytes: 960 * GIB },
  ],
  nics: [
    { name: 'eno1', mac: 'aa:bb:cc:00:00:01', speedGbps: 25 },
    { name: 'eno2', mac: 'aa:bb:cc:00:00:02', speedGbps: 25 },
  ],
};

describe('hardwareChanges', () => {
  it('finds nothing when nothing changed', () => {
    expect(hardwareChanges(before, structuredClone(before))).toEqual([]);
  });

  it('names a missing DIMM, a missing disk by serial, a dead NIC and fewer CPUs', () => {
    const after: HardwareDetails = {
      cpu: { count: 16, arch: 'x86_64' },
      ramMebibytes: 49_152,
      storage: [before.storage![0]!, { name: '/dev/sdb', serialNumber: 'S3', sizeBytes: 960 * GIB }],
      nics: [{ ...before.nics![0]!, speedGbps: 10 }],
    };
    expect(hardwareChanges(before, after)).toEqual([
      'memory 65536 MiB → 49152 MiB (16384 MiB less: a missing or failed DIMM?)',
      'CPU count 32 → 16',
      'disk /dev/sdb, serial S2 (960 GiB) missing',
      'disk /dev/sdb, serial S3 (960 GiB) new',
      'NICs 2 → 1',
      'NIC eno1 aa:bb:cc:00:00:01: speed 25 → 10 Gbps',
      'NIC eno2 aa:bb:cc:00:00:02 missing',
    ]);
  });

  it('compares disks without serial or name by position (Ironic properties only)', () => {
    expect(hardwareChanges({ storage: [{ sizeBytes: 500 * GIB }] }, { storage: [{ sizeBytes: 250 * GIB }] })).toEqual(['disk #1 (500 GiB): size 500 GiB → 250 GiB']);
    expect(hardwareChanges({ ramMebibytes: 1024 }, undefined)).toEqual(['the re-inspection found no hardware details']);
  });
});
