import { describe, expect, it } from 'vitest';
import { emptyStatus, HostStatusSchema, MAX_LENGTH, type HostStatus } from '../../model/host';
import { fitStrings } from '../../model/fit-schema';
import { schemaErrors } from '../../model/validate';

describe('fitStrings', () => {
  const observed = (): HostStatus => ({
    ...emptyStatus(),
    errorMessage: 'x'.repeat(40_000),
    hardware: {
      systemVendor: { manufacturer: 'QEMU', productName: 'p'.repeat(300) },
      nics: [{ name: 'eth0', model: 'm'.repeat(1000), mac: '52:54:00:12:34:56' }],
      cpu: { arch: 'x86_64', flags: ['sse', 'f'.repeat(100)] },
      storage: [{ name: '/dev/sda', alternateNames: ['/dev/disk/by-path/'.padEnd(2000, 'a')] }],
    },
  });

  it('cuts what the BMC or Ironic said to the limits the CRD enforces, and leaves the rest as it is', () => {
    const status = observed();
    expect(schemaErrors(HostStatusSchema, status, 'status').map((e) => e.field).sort()).toEqual([
      'status.errorMessage',
      'status.hardware.cpu.flags[1]',
      'status.hardware.nics[0].model',
      'status.hardware.storage[0].alternateNames[0]',
      'status.hardware.systemVendor.productName',
    ]);
    const fitted = fitStrings(HostStatusSchema, status);
    expect(schemaErrors(HostStatusSchema, fitted, 'status')).toEqual([]);
    expect(fitted.errorMessage).toHaveLength(MAX_LENGTH.message);
    expect(fitted.errorMessage.endsWith('…')).toBe(true);
    expect(fitted.hardware?.nics?.[0]?.model).toHaveLength(MAX_LENGTH.text);
    expect(fitted.hardware?.nics?.[0]?.name).toBe('eth0');
    expect(fitted.hardware?.cpu?.flags).toEqual(['sse', `${'f'.repeat(MAX_LENGTH.word - 1)}…`]);
    expect(fitted.hardware?.systemVendor?.manufacturer).toBe('QEMU');
    // A copy: the workflow's own status is not changed.
    expect(status.errorMessage).toHaveLength(40_000);
  });

  it('returns a status that already fits unchanged', () => {
    const status = { ...emptyStatus(), errorMessage: 'deploy failed' };
    expect(fitStrings(HostStatusSchema, status)).toEqual(status);
  });
});
