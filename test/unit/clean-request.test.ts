/** Manual clean requests: what is refused (model/clean.ts) and what Ironic is sent (clients/ironic/clean-steps.ts). */
import { describe, expect, it } from 'vitest';
import { validateCleanRequest } from '../../model/clean';
import { biosSettings, ironicCleanSteps, targetRaidConfig } from '../../clients/ironic/clean-steps';
import { decide, nextStateAfter } from '../../workflows/host/decide';
import { interruptReason } from '../../workflows/host/interrupt';
import { hostState, testSpec } from '../support/host-state';

const fields = (body: unknown): string[] => {
  const r = validateCleanRequest(body);
  return r.ok ? [] : r.errors.map((e) => e.field);
};

describe('validateCleanRequest', () => {
  it('accepts every named step with what it takes', () => {
    const body = {
      steps: [
        { name: 'erase-metadata' },
        { name: 'erase-full' },
        { name: 'raid', raid: { hardwareRAIDVolumes: [{ level: '1+0', name: 'root', sizeGibibytes: 100, numberOfPhysicalDisks: 4, physicalDisks: ['disk-0'], rotational: true, controller: 'RAID.Integrated.1-1' }] } },
        { name: 'bios', firmware: { sriovEnabled: true }, settings: { BootMode: 'Uefi' } },
        { name: 'firmware', updates: [{ component: 'bios', url: 'https://fw.example/bios.bin?sig=x' }, { component: 'bmc', url: 'http://10.0.0.1/bmc.bin' }] },
      ],
    };
    expect(validateCleanRequest(body)).toEqual({ ok: true, value: body });
  });

  it('refuses firmware updates that are not {component: bios|bmc, url: http(s)}', () => {
    expect(fields({ steps: [{ name: 'firmware' }] })).toEqual(['steps[0].updates']);
    expect(fields({ steps: [{ name: 'firmware', updates: [] }] })).toEqual(['steps[0].updates']);
    expect(fields({ steps: [{ name: 'firmware', updates: [{ component: 'nic', url: 'ftp://h/x.bin', extra: 1 }, 'x'] }] })).toEqual([
      'steps[0].updates[0].extra',
      'steps[0].updates[0].component',
      'steps[0].updates[0].url',
      'steps[0].updates[1]',
    ]);
    expect(validateCleanRequest({ steps: [{ name: 'firmware', updates: [{ component: 'bios', url: 'file:///bios.bin' }] }] })).toMatchObject({
      ok: false,
      errors: [{ field: 'steps[0].updates[0].url', reason: expect.stringContaining('http or https') }],
    });
  });

  it('takes an update\'s expected version (what the component reports once flashed), never sent to Ironic', () => {
    const update = { component: 'bmc', url: 'http://h/bmc.bin', version: '5.0.1' };
    expect(validateCleanRequest({ steps: [{ name: 'firmware', updates: [update] }] })).toMatchObject({ ok: true });
    expect(fields({ steps: [{ name: 'firmware', updates: [{ ...update, version: '' }, { ...update, version: 5 }, { ...update, version: '-x' }] }] })).toEqual([
      'steps[0].updates[0].version',
      'steps[0].updates[1].version',
      'steps[0].updates[2].version',
    ]);
    expect(ironicCleanSteps({ name: 'firmware', updates: [{ component: 'bmc', url: 'http://h/bmc.bin', version: '5.0.1' }] })).toEqual([
      { interface: 'firmware', step: 'update', args: { settings: [{ component: 'bmc', url: 'http://h/bmc.bin' }] } },
    ]);
  });

  it('names each field it refuses', () => {
    expect(fields(null)).toEqual(['body']);
    expect(fields({ steps: [{ name: 'bios' }] })).toEqual(['steps[0]']);
    expect(fields({ steps: [{ name: 'erase-full' }, { name: 'erase-full' }] })).toEqual(['steps[1].name']);
    expect(fields({ steps: [{ name: 'erase-full', raid: {} }] })).toEqual(['steps[0].raid']);
    expect(fields({ steps: [{ name: 'raid', raid: { hardwareRAIDVolumes: [{ level: '1' }], softwareRAIDVolumes: [{ level: '1' }] } }] })).toEqual(['steps[0].raid']);
    expect(fields({ steps: [{ name: 'raid', raid: { hardwareRAIDVolumes: [] } }] })).toEqual(['steps[0].raid.hardwareRAIDVolumes']);
    expect(fields({ steps: [{ name: 'raid', raid: { hardwareRAIDVolumes: [{ level: '1', sizeGibibytes: 0, rotational: 'yes' }] } }] })).toEqual([
      'steps[0].raid.hardwareRAIDVolumes[0].sizeGibibytes',
      'steps[0].raid.hardwareRAIDVolumes[0].rotational',
    ]);
    expect(fields({ steps: [{ name: 'bios', settings: { '1bad': 'x', Good: 7 } }] })).toEqual(['steps[0].settings.1bad', 'steps[0].settings.Good']);
    expect(fields({ steps: new Array(9).fill({ name: 'erase-metadata' }) })).toEqual(['steps']);
  });
});

describe("Ironic's wire format", () => {
  it('builds target_raid_config as BMO does: the first volume is the root volume, no size means MAX', () => {
    expect(targetRaidConfig({ hardwareRAIDVolumes: [{ level: '1', rotational: false }, { level: '5', sizeGibibytes: 500, name: 'data' }] })).toEqual({
      logical_disks: [
        { size_gb: 'MAX', raid_level: '1', is_root_volume: true, disk_type: 'ssd' },
        { size_gb: 500, raid_level: '5', volume_name: 'data' },
      ],
    });
    expect(targetRaidConfig({ softwareRAIDVolumes: [{ level: '1' }] })).toEqual({ logical_disks: [{ size_gb: 'MAX', raid_level: '1', controller: 'software', is_root_volume: true }] });
  });

  it('maps firmware flags to BIOS names, settings by name winning', () => {
    expect(biosSettings({ firmware: { virtualizationEnabled: true, simultaneousMultithreadingEnabled: false }, settings: { ProcVirtualization: 'Disabled' } })).toEqual([
      { name: 'ProcVirtualization', value: 'Disabled' },
      { name: 'LogicalProc', value: 'Disabled' },
    ]);
    expect(ironicCleanSteps({ name: 'raid', raid: { hardwareRAIDVolumes: [{ level: '1' }] } }).map((s) => `${s.interface}.${s.step}`)).toEqual([
      'raid.delete_configuration',
      'raid.create_configuration',
    ]);
    expect(ironicCleanSteps({ name: 'erase-metadata' })).toEqual([{ interface: 'deploy', step: 'erase_devices_metadata', args: {} }]);
    expect(ironicCleanSteps({ name: 'firmware', updates: [{ component: 'bmc', url: 'http://h/bmc.bin' }] })).toEqual([
      { interface: 'firmware', step: 'update', args: { settings: [{ component: 'bmc', url: 'http://h/bmc.bin' }] } },
    ]);
  });
});

describe('the clean rule of decide()', () => {
  const pending = { request: { steps: [{ name: 'erase-metadata' as const }] }, id: 1, at: '2026-01-01T00:00:00Z' };
  it('cleans an available host in preparing, before an image, and again in preparing until the request is gone', () => {
    const s = hostState({ state: 'available', spec: testSpec({ image: { url: 'http://i/a.qcow2', checksum: 'c'.repeat(32), checksumType: 'md5', format: 'qcow2' } }), ID: 'n' });
    expect(decide(s)).toMatchObject({ kind: 'operation', op: 'provision' });
    s.cleanRequest = pending;
    expect(decide(s)).toEqual({ kind: 'operation', op: 'clean', state: 'preparing' });
    expect(nextStateAfter('clean', 'preparing', s)).toBe('preparing');
    s.status.provisioning.state = 'preparing';
    expect(decide(s)).toEqual({ kind: 'operation', op: 'clean', state: 'preparing' });
    expect(interruptReason(s, 'clean')).toBeUndefined();
    delete s.cleanRequest;
    expect(decide(s)).toEqual({ kind: 'operation', op: 'prepare', state: 'preparing' });
    expect(interruptReason(s, 'clean')).toBe('the clean request was withdrawn');
  });
});
