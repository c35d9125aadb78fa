/** HostFirmwareSettings checked against a FirmwareSchema built from Ironic's BIOS registry (model/firmware-settings.ts). */
import { describe, expect, it } from 'vitest';
import { changedSettings, firmwareSettingsErrors, schemaFromIronic, type IronicBiosSetting } from '../../model/firmware-settings';

/** As Ironic 39 returns them (GET /v1/nodes/{id}/bios?detail=true), registry fields null where the BMC gave none. */
const IRONIC: IronicBiosSetting[] = [
  { name: 'ProcVirtualization', value: 'Enabled', attribute_type: 'Enumeration', allowable_values: ['Enabled', 'Disabled'], read_only: false, lower_bound: null, upper_bound: null },
  { name: 'NumCores', value: '8', attribute_type: 'Integer', allowable_values: [], lower_bound: 1, upper_bound: 64, read_only: null },
  { name: 'SerialNumber', value: 'X1', attribute_type: 'String', read_only: true, max_length: 16 },
  { name: 'AssetTag', value: '', attribute_type: 'String', min_length: 0, max_length: 4 },
  { name: 'AdminPassword', value: null, attribute_type: 'Password' },
  { name: 'BootMode', value: 'Uefi', attribute_type: null, allowable_values: null },
];

describe('FirmwareSchema from Ironic', () => {
  it('keeps the registry fields Ironic has, drops the nulls and empty lists', () => {
    expect(schemaFromIronic(IRONIC)).toEqual({
      ProcVirtualization: { attribute_type: 'Enumeration', allowable_values: ['Enabled', 'Disabled'], read_only: false },
      NumCores: { attribute_type: 'Integer', lower_bound: 1, upper_bound: 64 },
      SerialNumber: { attribute_type: 'String', read_only: true, max_length: 16 },
      AssetTag: { attribute_type: 'String', min_length: 0, max_length: 4 },
      AdminPassword: { attribute_type: 'Password' },
      BootMode: {},
    });
  });
});

describe('HostFirmwareSettings validated against the schema', () => {
  const schema = schemaFromIronic(IRONIC);
  const errors = (desired: Record<string, string | number>) => firmwareSettingsErrors(desired, schema);

  it('accepts allowed values, integers as numbers or strings, and any value of a setting without a registry type', () => {
    expect(errors({ ProcVirtualization: 'Disabled', NumCores: 16, AssetTag: 'r7', BootMode: 'Bios' })).toEqual([]);
    expect(errors({ NumCores: '64' })).toEqual([]);
  });

  it('names the setting and says what is wrong and what is accepted', () => {
    expect(errors({ Turbo: 'On', SerialNumber: 'Y', ProcVirtualization: 'On', NumCores: 65, AssetTag: 'toolong', AdminPassword: 'x' })).toEqual([
      { field: 'spec.settings.Turbo', reason: expect.stringMatching(/^not in the host's firmware schema; known settings: AdminPassword, AssetTag, BootMode, NumCores/) },
      { field: 'spec.settings.SerialNumber', reason: 'is read-only in the BIOS registry; remove it' },
      { field: 'spec.settings.ProcVirtualization', reason: '"On" is not allowed; accepted: Enabled, Disabled' },
      { field: 'spec.settings.NumCores', reason: '65 is out of range; accepted: 1 to 64' },
      { field: 'spec.settings.AssetTag', reason: 'is 7 characters long; accepted: 0 to 4' },
      { field: 'spec.settings.AdminPassword', reason: 'is a password; metalflow never sets passwords through firmware settings' },
    ]);
    expect(errors({ NumCores: 'eight' })).toEqual([{ field: 'spec.settings.NumCores', reason: '"eight" is not an integer' }]);
  });

  it('says so when Ironic reports no settings at all', () => {
    expect(firmwareSettingsErrors({ X: '1' }, {})[0]?.reason).toMatch(/none \(Ironic reports no BIOS settings for this host yet\)/);
  });

  it('finds the settings whose value differs from what Ironic reports', () => {
    const current = Object.fromEntries(IRONIC.map((s) => [s.name, s.value]));
    expect(changedSettings({ ProcVirtualization: 'Enabled', NumCores: 16, BootMode: 'Uefi' }, current)).toEqual({ NumCores: '16' });
    expect(changedSettings({ NumCores: 8 }, current)).toEqual({});
  });
});
