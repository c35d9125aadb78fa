import { describe, expect, it } from 'vitest';
import { emptyStatus, type HostSpec, type ProvisioningState } from '../../model/host';
import { decide } from '../../workflows/host/decide';
import { settingsHeld } from '../../workflows/host/rules/servicing';
import { interruptReason } from '../../workflows/host/interrupt';
import { hostState, testSpec, told } from '../support/host-state';
import { pendingSettingsSteps, recordAppliedSettings, settingsSteps } from '../../model/host-settings';
import { raidConfigMatches, targetRaidConfig } from '../../clients/ironic/clean-steps';

const spec = (over: Partial<HostSpec>): HostSpec => ({ bmc: { address: 'fake://x', credentialsName: 'c' }, online: true, ...over }) as HostSpec;

describe('spec.raid and spec.firmware as clean steps', () => {
  it('asks for no step for the empty values Metal3 manifests carry', () => {
    expect(settingsSteps(spec({ raid: { hardwareRAIDVolumes: null, softwareRAIDVolumes: [] }, firmware: {} }))).toEqual([]);
    expect(settingsSteps(undefined)).toEqual([]);
  });

  it('asks for raid then bios, empty keys dropped', () => {
    const steps = settingsSteps(spec({ raid: { hardwareRAIDVolumes: [{ level: '1' }], softwareRAIDVolumes: null }, firmware: { sriovEnabled: false } }));
    expect(steps).toEqual([
      { name: 'raid', raid: { hardwareRAIDVolumes: [{ level: '1' }] } },
      { name: 'bios', firmware: { sriovEnabled: false } },
    ]);
  });

  it('is pending until recorded as applied, then again when the spec changes', () => {
    const status = emptyStatus();
    const s = spec({ raid: { softwareRAIDVolumes: [{ level: '1' }] }, firmware: { virtualizationEnabled: true } });
    expect(pendingSettingsSteps(s, status).map((step) => step.name)).toEqual(['raid', 'bios']);
    recordAppliedSettings(status, pendingSettingsSteps(s, status));
    expect(status.provisioning.raid).toEqual({ softwareRAIDVolumes: [{ level: '1' }] });
    expect(pendingSettingsSteps(s, status)).toEqual([]);
    const changed = spec({ ...s, firmware: { virtualizationEnabled: false } });
    expect(pendingSettingsSteps(changed, status).map((step) => step.name)).toEqual(['bios']);
  });

  it("reads a status BMO wrote (its key order, its nulls) as applied", () => {
    const status = emptyStatus();
    status.provisioning.raid = { softwareRAIDVolumes: null, hardwareRAIDVolumes: [{ sizeGibibytes: 10, level: '1' }] };
    expect(pendingSettingsSteps(spec({ raid: { hardwareRAIDVolumes: [{ level: '1', sizeGibibytes: 10 }] } }), status)).toEqual([]);
  });
});

describe("the node's raid_config compared with the desired volumes", () => {
  const desired = targetRaidConfig({ hardwareRAIDVolumes: [{ level: '1', sizeGibibytes: 100, name: 'root' }, { level: '5' }] });
  const built = {
    logical_disks: [
      { raid_level: '1', size_gb: 100, is_root_volume: true, volume_name: 'root', controller: 'RAID.Integrated.1-1', physical_disks: ['a', 'b'] },
      { raid_level: '5', size_gb: 1862, controller: 'RAID.Integrated.1-1' },
    ],
  };

  it('matches what was built (MAX matches any size; fields not asked for are not compared)', () => {
    expect(raidConfigMatches(built, desired)).toBe(true);
  });

  it('does not match another level, size, name, count of volumes, or an empty raid_config', () => {
    const disks = built.logical_disks;
    expect(raidConfigMatches({ logical_disks: [{ ...disks[0], raid_level: '0' }, disks[1]] }, desired)).toBe(false);
    expect(raidConfigMatches({ logical_disks: [{ ...disks[0], size_gb: 200 }, disks[1]] }, desired)).toBe(false);
    expect(raidConfigMatches({ logical_disks: [{ ...disks[0], volume_name: 'other' }, disks[1]] }, desired)).toBe(false);
    expect(raidConfigMatches({ logical_disks: [disks[0]] }, desired)).toBe(false);
    expect(raidConfigMatches({}, desired)).toBe(false);
    expect(raidConfigMatches(undefined, desired)).toBe(false);
  });

  it('compares the root volume and the disk type', () => {
    const ssd = targetRaidConfig({ hardwareRAIDVolumes: [{ level: '1', rotational: false }] });
    expect(raidConfigMatches({ logical_disks: [{ raid_level: '1', size_gb: 10, is_root_volume: true, disk_type: 'ssd' }] }, ssd)).toBe(true);
    expect(raidConfigMatches({ logical_disks: [{ raid_level: '1', size_gb: 10, is_root_volume: true, disk_type: 'hdd' }] }, ssd)).toBe(false);
    expect(raidConfigMatches({ logical_disks: [{ raid_level: '1', size_gb: 10, disk_type: 'ssd' }] }, ssd)).toBe(false);
  });
});

describe('the spec settings rule of decide()', () => {
  const withSettings = (state: ProvisioningState) => {
    return hostState({ state, spec: testSpec({ firmware: { virtualizationEnabled: true } }), ID: 'n' });
  };

  it('applies changed settings while preparing, and from available (before an image) through preparing', () => {
    expect(decide(withSettings('preparing'))).toEqual({ kind: 'operation', op: 'clean', state: 'preparing' });
    const available = withSettings('available');
    available.spec = { ...available.spec!, image: { url: 'http://i/a.qcow2', checksum: 'c'.repeat(32), checksumType: 'md5', format: 'qcow2' } };
    expect(decide(available)).toEqual({ kind: 'operation', op: 'clean', state: 'preparing' });
    expect(interruptReason(available, 'clean')).toBeUndefined();
    recordAppliedSettings(available.status, pendingSettingsSteps(available.spec, available.status));
    expect(decide(available)).toMatchObject({ kind: 'operation', op: 'provision' });
  });

  it('holds a change on a provisioned host, saying why', () => {
    const s = withSettings('provisioned');
    s.spec = { ...s.spec!, image: { url: 'http://i/a.qcow2', checksum: 'c'.repeat(32), checksumType: 'md5', format: 'qcow2' } };
    s.status.provisioning.image = s.spec.image;
    expect(decide(s)).toEqual({ kind: 'tell', held: settingsHeld(s) });
    expect(decide(told(s))).toMatchObject({ kind: 'wait' });
    expect(settingsHeld(s)).toMatch(/^spec\.firmware changed while the host is provisioned: applied to a provisioned host only by servicing, which needs a HostUpdatePolicy with firmwareSettings: onReboot \(the host has none\)/);
    expect(settingsHeld(withSettings('available'))).toBeUndefined();
  });
});
