/** What the HostFirmwareSettings controller derives from Ironic's BIOS settings (model/firmware-status.ts), as BMO derives it. */
import { describe, expect, it } from 'vitest';
import type { IronicBiosSetting } from '../../model/firmware-settings';
import { evaluateFirmwareSettings, firmwareConditions, firmwareSchemaName, firmwareSchemaOf, reportedSettings, sameConditions } from '../../model/firmware-status';

const IRONIC: IronicBiosSetting[] = [
  { name: 'ProcVirtualization', value: 'Enabled', attribute_type: 'Enumeration', allowable_values: ['Enabled', 'Disabled'] },
  { name: 'SriovGlobalEnable', value: 'Disabled', attribute_type: 'Enumeration', allowable_values: ['Enabled', 'Disabled'], read_only: true },
  { name: 'NumCores', value: '16', attribute_type: 'Integer', lower_bound: 1, upper_bound: 64 },
  { name: 'BootMode', value: 'Uefi', attribute_type: null },
  { name: 'AdminPassword', value: null, attribute_type: 'Password' },
  { name: 'SetupPasswordHash', value: 'x', attribute_type: 'String' },
];
const schema = firmwareSchemaOf(IRONIC);
const reported = reportedSettings(IRONIC);

describe('status.settings and the FirmwareSchema from Ironic', () => {
  it('leave out every setting whose name has Password, as BMO does', () => {
    expect(reported).toEqual({ ProcVirtualization: 'Enabled', SriovGlobalEnable: 'Disabled', NumCores: '16', BootMode: 'Uefi' });
    expect(Object.keys(schema).sort()).toEqual(['BootMode', 'NumCores', 'ProcVirtualization', 'SriovGlobalEnable']);
  });

  it("names the schema as BMO's GetSchemaName does (checked against the Go code: schema-7a51083f), whatever the order", () => {
    expect(firmwareSchemaName(schema)).toBe('schema-7a51083f');
    expect(firmwareSchemaName(firmwareSchemaOf([...IRONIC].reverse()))).toBe('schema-7a51083f');
    expect(firmwareSchemaName(firmwareSchemaOf(IRONIC.slice(1)))).not.toBe('schema-7a51083f');
  });
});

describe('ChangeDetected and Valid', () => {
  it('no change: nothing validated (BMO validates only a mismatch)', () => {
    expect(evaluateFirmwareSettings({ NumCores: 16, ProcVirtualization: 'Enabled' }, reported, schema)).toEqual({ changeDetected: false, errors: [], changed: {} });
  });

  it('a valid change: the differing settings, as strings', () => {
    expect(evaluateFirmwareSettings({ NumCores: 8, ProcVirtualization: 'Enabled', BootMode: 'Bios' }, reported, schema)).toEqual({
      changeDetected: true,
      errors: [],
      changed: { NumCores: '8', BootMode: 'Bios' },
    });
  });

  it('an invalid change: each setting named, a password and an unreported one too', () => {
    const { changeDetected, errors } = evaluateFirmwareSettings({ SriovGlobalEnable: 'Enabled', NumCores: 65, Turbo: 'On', AdminPassword: 'x', ProcVirtualization: 'On' }, reported, schema);
    expect(changeDetected).toBe(true);
    expect(errors).toEqual([
      { field: 'spec.settings.Turbo', reason: 'not in status.settings: Ironic reports no such setting for this host' },
      { field: 'spec.settings.AdminPassword', reason: 'a Password setting cannot be set' },
      { field: 'spec.settings.SriovGlobalEnable', reason: 'is read-only in the BIOS registry; remove it' },
      { field: 'spec.settings.NumCores', reason: '65 is out of range; accepted: 1 to 64' },
      { field: 'spec.settings.ProcVirtualization', reason: '"On" is not allowed; accepted: Enabled, Disabled' },
    ]);
  });

  it('a value the bios clean step refuses (empty) is invalid too', () => {
    expect(evaluateFirmwareSettings({ BootMode: '' }, reported, schema).errors).toEqual([{ field: 'spec.settings.BootMode', reason: 'must be a string of 1-256 characters' }]);
  });

  it('conditions as BMO sets them; the transition time moves only with the status', () => {
    const bad = evaluateFirmwareSettings({ NumCores: 65 }, reported, schema);
    const first = firmwareConditions(undefined, bad, 3, 't1');
    expect(first).toEqual([
      { type: 'ChangeDetected', status: 'True', reason: 'Success', message: '', observedGeneration: 3, lastTransitionTime: 't1' },
      { type: 'Valid', status: 'False', reason: 'ConfigurationError', message: 'Invalid BIOS setting', observedGeneration: 3, lastTransitionTime: 't1' },
    ]);
    const fixed = firmwareConditions(first, evaluateFirmwareSettings({ NumCores: 8 }, reported, schema), 4, 't2');
    expect(fixed.map((c) => [c.type, c.status, c.lastTransitionTime])).toEqual([
      ['ChangeDetected', 'True', 't1'],
      ['Valid', 'True', 't2'],
    ]);
    expect(sameConditions(first, firmwareConditions(first, bad, 3, 't9'))).toBe(true);
    expect(sameConditions(first, fixed)).toBe(false);
  });
});
