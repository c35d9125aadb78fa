import { describe, expect, it } from 'vitest';
import type { CleanStep } from '../../model/clean';
import type { HostState } from '../../contracts/host';
import { decide } from '../../workflows/host/decide';
import { firmwareHeldReason, heldServiceable, heldToClean, settleHeld, withHeld } from '../../workflows/host/rules/firmware-held-rules';
import { serviceableSettings, settingsHeld } from '../../workflows/host/rules/servicing';
import { hostState, testSpec, told } from '../support/host-state';

const IMAGE = { url: 'http://i/a.qcow2', checksum: 'c'.repeat(32), checksumType: 'md5' as const, format: 'qcow2' as const };
const BIOS: CleanStep = { name: 'bios', settings: { ProcVirtualization: 'Disabled' } };
const IMAGES: CleanStep = { name: 'firmware', updates: [{ component: 'bios', url: 'http://i/bios.bin' }] };

/** A provisioned host holding `steps` (bios given first: the rules order them). */
function provisioned(steps: CleanStep[], policy?: HostState['updatePolicy']): HostState {
  const s = hostState({ state: 'provisioned', spec: testSpec({ image: IMAGE }), ID: 'n' });
  s.status.provisioning.image = IMAGE;
  s.firmwareHeld = { request: { steps }, id: 1, at: '2026-01-01T00:00:00Z' };
  if (policy) s.updatePolicy = policy;
  return s;
}
const rebootAsked = (s: HostState): HostState => ({ ...s, power: { holds: {}, seq: 1, reboot: { mode: 'soft', api: true, annotation: false } } });

describe('a firmware change held on a provisioned host (patch firmware-servicing)', () => {
  it('waits without a policy, saying which entry it needs, and is not serviced at a reboot', () => {
    const s = rebootAsked(provisioned([BIOS, IMAGES]));
    expect(heldServiceable(s)).toEqual([]);
    expect(decide(s)).toEqual({ kind: 'tell', held: settingsHeld(s) });
    expect(decide(told(s))).toMatchObject({ kind: 'operation', op: 'reboot' });
    expect(settingsHeld(s)).toBe(
      "HostFirmwareComponents updates (bios) held while the host is provisioned: needs a HostUpdatePolicy with firmwareUpdates: onReboot to be applied by servicing (the host has none); or deprovision it (remove the image) to apply at the next preparing; " +
        "HostFirmwareSettings change (ProcVirtualization) held while the host is provisioned: needs a HostUpdatePolicy with firmwareSettings: onReboot to be applied by servicing (the host has none); or deprovision it (remove the image) to apply at the next preparing",
    );
  });

  it('is serviced before the reboot with the policy, firmware then bios; only the allowed part', () => {
    const both = provisioned([BIOS, IMAGES], { firmwareSettings: 'onReboot', firmwareUpdates: 'onReboot' });
    expect(decide(told(both))).toMatchObject({ kind: 'wait' });
    expect(decide(told(rebootAsked(both)))).toEqual({ kind: 'operation', op: 'service', state: 'provisioned' });
    expect(serviceableSettings(both)).toEqual([IMAGES, BIOS]);
    expect(firmwareHeldReason(both)).toMatch(/^HostFirmwareComponents updates \(bios\) held while the host is provisioned: applied by servicing at the host's next reboot \(HostUpdatePolicy firmwareUpdates: onReboot\); reboot it to apply now; HostFirmwareSettings/);

    const settingsOnly = provisioned([BIOS, IMAGES], { firmwareSettings: 'onReboot', firmwareUpdates: 'onPreparing' });
    expect(heldServiceable(settingsOnly)).toEqual([BIOS]);
    expect(firmwareHeldReason(settingsOnly)).toMatch(/needs a HostUpdatePolicy with firmwareUpdates: onReboot to be applied by servicing \(firmwareUpdates is onPreparing\)/);
    settleHeld(settingsOnly, 1, [BIOS], 'now');
    expect(settingsOnly.firmwareHeld?.request.steps).toEqual([IMAGES]);
    expect(settingsOnly.firmwareServiced).toEqual({ settings: { ProcVirtualization: 'Disabled' }, at: 'now' });
  });

  it('is never serviced on a host that is not provisioned', () => {
    const s = rebootAsked(provisioned([BIOS], { firmwareSettings: 'onReboot' }));
    s.status.provisioning.state = 'provisioning';
    expect(heldServiceable(s)).toEqual([]);
    expect(firmwareHeldReason(s)).toBeUndefined();
  });

  it('joins spec.firmware flags and held settings in one bios step', () => {
    const flags: CleanStep = { name: 'bios', firmware: { sriovEnabled: true } };
    expect(withHeld([IMAGES, BIOS], [flags])).toEqual([IMAGES, { ...BIOS, firmware: { sriovEnabled: true } }]);
    expect(withHeld([IMAGES], [flags])).toEqual([IMAGES, flags]);
    expect(withHeld([], [flags])).toEqual([flags]);
  });

  it('keeps a change that replaced the serviced one while the service ran', () => {
    const s = provisioned([BIOS], { firmwareSettings: 'onReboot' });
    settleHeld(s, 0, [BIOS], 'now');
    expect(s.firmwareHeld?.request.steps).toEqual([BIOS]);
    settleHeld(s, 1, [BIOS], 'now');
    expect(s.firmwareHeld).toBeUndefined();
  });

  it('becomes the clean of the available host a deprovision leaves (patch held-firmware-kept), firmware first', () => {
    const s = provisioned([BIOS, IMAGES]);
    heldToClean(s, 'then');
    expect(s.cleanRequest).toEqual({ request: { steps: [IMAGES, BIOS] }, id: 1, at: 'then', held: true });
    s.status.provisioning.state = 'available';
    delete s.firmwareHeld;
    expect(decide(s)).toEqual({ kind: 'operation', op: 'clean', state: 'preparing' });

    // A clean already asked for keeps its steps; the held ones it lacks join it.
    const asked = provisioned([BIOS, IMAGES]);
    asked.cleanRequest = { request: { steps: [{ name: 'bios', settings: { NumCores: '8' } }] }, id: 4, at: 'before' };
    heldToClean(asked, 'then');
    expect(asked.cleanRequest).toEqual({ request: { steps: [{ name: 'bios', settings: { NumCores: '8' } }, IMAGES] }, id: 4, at: 'before', held: true });
  });
});
