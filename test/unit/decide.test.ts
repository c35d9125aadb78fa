import { describe, expect, it } from 'vitest';
import { decide, nextStateAfter, registrationFingerprint, specConflict } from '../../workflows/decide';
import { DEFAULT_HOST_OPTIONS, type HostState } from '../../workflows/definitions';
import { emptyStatus, type HostSpec, type ProvisioningState } from '../../types/host';

const spec = (over: Partial<HostSpec> = {}): HostSpec => ({
  bmc: { address: 'fake://n0', credentialsName: 'n0-bmc-secret' },
  bootMACAddress: '52:54:00:00:00:01',
  online: true,
  ...over,
});

function state(over: { state?: ProvisioningState; spec?: HostSpec; poweredOn?: boolean; deleteRequested?: boolean; ID?: string } = {}): HostState {
  const status = emptyStatus();
  status.provisioning.state = over.state ?? '';
  status.provisioning.ID = over.ID ?? '';
  status.poweredOn = over.poweredOn ?? true;
  const s = over.spec;
  return {
    ref: { namespace: 'ns', name: 'n0' },
    spec: s,
    generation: 1,
    registered: s ? registrationFingerprint(s) : undefined,
    status,
    deleteRequested: over.deleteRequested ?? false,
    opSeq: 0,
    operations: [],
    options: DEFAULT_HOST_OPTIONS,
  };
}

describe('decide', () => {
  it('waits without a spec and enrolls once one arrives', () => {
    expect(decide(state())).toEqual({ kind: 'wait' });
    expect(decide(state({ spec: spec() }))).toEqual({ kind: 'operation', op: 'enroll', state: 'registering' });
  });

  it('walks registering → inspecting → preparing → available', () => {
    const s = state({ spec: spec(), state: 'registering' });
    expect(nextStateAfter('enroll', 'registering', s)).toBe('inspecting');
    expect(nextStateAfter('inspect', 'inspecting', s)).toBe('preparing');
    expect(nextStateAfter('prepare', 'preparing', s)).toBe('available');
    expect(decide(state({ spec: spec(), state: 'inspecting' }))).toMatchObject({ op: 'inspect' });
    expect(decide(state({ spec: spec(), state: 'preparing' }))).toMatchObject({ op: 'prepare' });
  });

  it('skips inspection for externally provisioned hosts', () => {
    const s = state({ spec: spec({ externallyProvisioned: true }), state: 'registering' });
    expect(nextStateAfter('enroll', 'registering', s)).toBe('externally provisioned');
  });

  it('provisions an available host with an image and deprovisions when it is removed', () => {
    const image = { url: 'http://x/i.qcow2', checksum: 'a'.repeat(64) };
    expect(decide(state({ spec: spec({ image }), state: 'available' }))).toEqual({ kind: 'operation', op: 'provision', state: 'provisioning' });
    expect(decide(state({ spec: spec({ image }), state: 'provisioned' }))).toEqual({ kind: 'wait' });
    expect(decide(state({ spec: spec(), state: 'provisioned' }))).toEqual({ kind: 'operation', op: 'deprovision', state: 'deprovisioning' });
  });

  it('undoes a provisioning whose image was removed while it waited to retry', () => {
    const image = { url: 'http://x/i.qcow2', checksum: 'a'.repeat(64) };
    expect(decide(state({ spec: spec({ image }), state: 'provisioning' }))).toEqual({ kind: 'operation', op: 'provision', state: 'provisioning' });
    expect(decide(state({ spec: spec(), state: 'provisioning' }))).toEqual({ kind: 'operation', op: 'deprovision', state: 'deprovisioning' });
  });

  it('follows spec.online in steady states', () => {
    expect(decide(state({ spec: spec({ online: false }), state: 'available', poweredOn: true }))).toMatchObject({ op: 'power', state: 'available' });
    expect(decide(state({ spec: spec({ online: true }), state: 'available', poweredOn: true }))).toEqual({ kind: 'wait' });
  });

  it('registers again when BMC settings change in a steady state, keeping the state', () => {
    const s = state({ spec: spec(), state: 'provisioned' });
    s.spec = spec({ bmc: { address: 'fake://n0', credentialsName: 'other-secret' }, image: { url: 'http://x/i', checksum: 'a'.repeat(32) } });
    expect(decide(s)).toEqual({ kind: 'operation', op: 'enroll', state: 'provisioned' });
    expect(nextStateAfter('enroll', 'provisioned', s)).toBe('provisioned');
  });

  it('deletes: deprovision first when provisioned, then power off, then remove', () => {
    const image = { url: 'http://x/i.qcow2', checksum: 'a'.repeat(64) };
    expect(decide(state({ spec: spec({ image }), state: 'provisioned', deleteRequested: true }))).toMatchObject({ op: 'deprovision' });
    const afterDeprovision = state({ spec: spec(), state: 'deprovisioning', deleteRequested: true });
    expect(nextStateAfter('deprovision', 'deprovisioning', afterDeprovision)).toBe('powering off before delete');
    expect(decide(state({ spec: spec(), state: 'available', deleteRequested: true }))).toEqual({ kind: 'operation', op: 'power', state: 'powering off before delete' });
    expect(nextStateAfter('power', 'powering off before delete', afterDeprovision)).toBe('deleting');
    expect(decide(state({ spec: spec(), state: 'deleting', deleteRequested: true }))).toMatchObject({ op: 'delete' });
  });

  it('finishes at once when a never-registered host is deleted', () => {
    expect(decide(state({ deleteRequested: true }))).toEqual({ kind: 'finish' });
  });

  it('does not deprovision an externally provisioned host on delete', () => {
    const s = state({ spec: spec({ externallyProvisioned: true }), state: 'externally provisioned', deleteRequested: true });
    expect(decide(s)).toMatchObject({ op: 'power' });
  });
});

describe('specConflict', () => {
  const image = { url: 'http://x/i.qcow2', checksum: 'a'.repeat(64) };
  it('rejects a new image while provisioning another, but allows removing it', () => {
    const s = state({ spec: spec({ image }), state: 'provisioning' });
    expect(specConflict(s, spec({ image: { ...image, url: 'http://x/other' } }), 'provision')).toMatch(/provisioning http:\/\/x\/i.qcow2/);
    expect(specConflict(s, spec(), 'provision')).toBeUndefined();
  });
  it('rejects BMC changes while registering and any change while deleting', () => {
    const s = state({ spec: spec(), state: 'registering' });
    expect(specConflict(s, spec({ bmc: { address: 'fake://n1', credentialsName: 'x' } }), 'enroll')).toMatch(/registering/);
    expect(specConflict(s, spec(), undefined)).toBeUndefined();
    expect(specConflict({ ...s, deleteRequested: true }, spec(), undefined)).toMatch(/deleted/);
  });
});
