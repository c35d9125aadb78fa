import { interruptReason } from '../../workflows/host/interrupt';
import { describe, expect, it } from 'vitest';
import { credentialsChanged, decide, deleteGiveUp, DELETE_RETRY_LIMIT, detachPending, inspectionMode, nextStateAfter, offlineHoldsProvisioning, registrationFingerprint, specConflict } from '../../workflows/host/decide';
import type { HostDirectives } from '../../contracts/host';
import { hostState, testSpec } from '../support/host-state';

const spec = testSpec;
const state = hostState;

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

  it('provisions an available host only while spec.online is true (BMO NeedsProvisioning), with the patch taken', () => {
    const image = { url: 'http://x/i.qcow2', checksum: 'a'.repeat(64) };
    const off = state({ spec: spec({ image, online: false }), state: 'available', poweredOn: false });
    expect(offlineHoldsProvisioning(off)).toBe(true);
    expect(decide(off, { online: true })).toEqual({ kind: 'wait' });
    // Still powered on: it is powered off, not provisioned.
    const offButOn = state({ spec: spec({ image, online: false }), state: 'available', poweredOn: true });
    expect(decide(offButOn, { online: true })).toMatchObject({ kind: 'operation', op: 'power', state: 'available' });
    const on = state({ spec: spec({ image, online: true }), state: 'available', poweredOn: false });
    expect(offlineHoldsProvisioning(on)).toBe(false);
    expect(decide(on, { online: true })).toEqual({ kind: 'operation', op: 'provision', state: 'provisioning' });
    // A provisioned host with online false stays provisioned (powered off), as before.
    expect(offlineHoldsProvisioning(state({ spec: spec({ image, online: false }), state: 'provisioned' }))).toBe(false);
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

  it("gives up cleaning up a host on delete after Metal3's retry count, and only with the patch's flag", () => {
    const failing = (st: Parameters<typeof state>[0], errorCount: number, errorType: 'provisioning error' | 'registration error' | 'power management error') => {
      const s = state({ spec: spec(), deleteRequested: true, ...st });
      Object.assign(s.status, { operationalStatus: 'error', errorCount, errorType, errorMessage: 'BMC unreachable' });
      return s;
    };
    // Within the retry count: the same step again.
    expect(deleteGiveUp(failing({ state: 'deprovisioning' }, DELETE_RETRY_LIMIT, 'provisioning error'))).toBeUndefined();
    expect(decide(failing({ state: 'deprovisioning' }, DELETE_RETRY_LIMIT, 'provisioning error'), { giveUp: true })).toMatchObject({ op: 'deprovision' });
    // Past it: deprovisioning skipped for the power off, then the power off for deleting.
    const deprov = failing({ state: 'deprovisioning' }, DELETE_RETRY_LIMIT + 1, 'provisioning error');
    expect(decide(deprov, { giveUp: true })).toMatchObject({ op: 'power', state: 'powering off before delete', gaveUp: { reason: 'DeprovisioningSkipped' } });
    expect(deleteGiveUp(deprov)!.message).toMatch(/^giving up on deprovisioning after 4 failures \(last: BMC unreachable\); .*clean it up by hand/);
    const off = failing({ state: 'powering off before delete' }, DELETE_RETRY_LIMIT + 2, 'power management error');
    expect(decide(off, { giveUp: true })).toMatchObject({ op: 'delete', state: 'deleting', gaveUp: { reason: 'PowerOffSkipped' } });
    // A host that cannot be registered (dead BMC, credentials gone, node lost) skips the power off too, before registering again.
    const unreachable = Object.assign(failing({ state: 'deprovisioning' }, 4, 'registration error'), { nodeLost: { nodeId: 'n', at: 't' } });
    expect(decide(unreachable, { giveUp: true })).toMatchObject({ op: 'delete', state: 'deleting' });
    expect(decide(unreachable)).toMatchObject({ op: 'enroll' });
    expect(deleteGiveUp(failing({ state: 'deprovisioning', deleteRequested: false }, 9, 'provisioning error'))).toBeUndefined();
    expect(deleteGiveUp(failing({ state: 'deleting' }, 9, 'registration error'))).toBeUndefined();
  });

  it('finishes at once when a never-registered host is deleted', () => {
    expect(decide(state({ deleteRequested: true }))).toEqual({ kind: 'finish' });
  });

  it('does not deprovision an externally provisioned host on delete', () => {
    const s = state({ spec: spec({ externallyProvisioned: true }), state: 'externally provisioned', deleteRequested: true });
    expect(decide(s)).toMatchObject({ op: 'power' });
  });

  it('registers a host whose node Ironic lost again where it stands, adopting a provisioned one, before a delete\'s deprovisioning', () => {
    const image = { url: 'http://x/i.qcow2', checksum: 'a'.repeat(64) };
    const lost = (st: Parameters<typeof state>[0]) => Object.assign(state(st), { nodeLost: { nodeId: 'n', at: 't' } });
    expect(decide(lost({ spec: spec({ image }), state: 'provisioned' }))).toEqual({ kind: 'operation', op: 'enroll', state: 'provisioned', adopt: true });
    expect(decide(lost({ spec: spec(), state: 'available' }))).toEqual({ kind: 'operation', op: 'enroll', state: 'available' });
    expect(decide(lost({ spec: spec({ image }), state: 'provisioning' }))).toEqual({ kind: 'operation', op: 'enroll', state: 'provisioning' });
    expect(decide(lost({ spec: spec({ image }), state: 'provisioned', deleteRequested: true }))).toEqual({ kind: 'operation', op: 'enroll', state: 'provisioned', adopt: true });
    expect(decide(lost({ spec: spec(), state: 'deprovisioning', deleteRequested: true }))).toEqual({ kind: 'operation', op: 'enroll', state: 'deprovisioning' });
    // Leaving Ironic anyway: nothing to register.
    expect(decide(lost({ spec: spec(), state: 'powering off before delete', deleteRequested: true }))).toMatchObject({ op: 'power' });
    expect(nextStateAfter('enroll', 'provisioning', lost({ spec: spec({ image }), state: 'provisioning' }))).toBe('provisioning');
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

describe('a host without a BMC', () => {
  it('becomes unmanaged and does nothing until a BMC is given', () => {
    const { bmc: _bmc, ...noBmc } = spec();
    expect(decide(state({ spec: noBmc }))).toEqual({ kind: 'enter', state: 'unmanaged' });
    expect(decide(state({ spec: noBmc, state: 'unmanaged' }))).toEqual({ kind: 'wait' });
    expect(decide(state({ spec: spec(), state: 'unmanaged' }))).toEqual({ kind: 'operation', op: 'enroll', state: 'registering' });
    // Nothing exists outside the workflow: deleting it just ends.
    expect(decide(state({ spec: noBmc, state: 'unmanaged', deleteRequested: true }))).toEqual({ kind: 'finish' });
  });
});

describe('the detached annotation', () => {
  const image = { url: 'http://x/i.qcow2', checksum: 'a'.repeat(64) };
  const detached = (over: Parameters<typeof state>[0], d: HostDirectives['detached'] = { deleteAction: 'delete', force: false }) => {
    const s = state(over);
    s.directives = { detached: d };
    return s;
  };

  it('detaches in provisioned, externally provisioned and available', () => {
    for (const st of ['provisioned', 'externally provisioned', 'available'] as const) {
      const s = detached({ spec: spec({ image, externallyProvisioned: st === 'externally provisioned' }), state: st, ID: 'n' });
      expect(detachPending(s)).toBeUndefined();
      expect(decide(s)).toEqual({ kind: 'operation', op: 'detach', state: st });
      expect(nextStateAfter('detach', st, s)).toBe(st);
    }
  });

  it('elsewhere lets the running work reach such a state first, and says why', () => {
    const s = detached({ spec: spec({ image }), state: 'provisioning', ID: 'n' });
    expect(decide(s)).toEqual({ kind: 'operation', op: 'provision', state: 'provisioning' });
    expect(detachPending(s)).toMatch(/provisioning; it is detached once it is provisioned/);
    // force: detached in any state but the delete path
    const forced = detached({ spec: spec({ image }), state: 'provisioning', ID: 'n' }, { deleteAction: 'delete', force: true });
    expect(decide(forced)).toEqual({ kind: 'operation', op: 'detach', state: 'provisioning' });
  });

  it('once detached does nothing (no power, no provisioning) while the annotation stays', () => {
    const s = detached({ spec: spec({ online: false }), state: 'available', poweredOn: true });
    s.detached = true;
    s.needsAttach = true;
    s.registered = undefined;
    expect(decide(s)).toEqual({ kind: 'wait' });
  });

  it('attaches again when it goes: a provisioned host is adopted, never redeployed', () => {
    const s = state({ spec: spec({ image }), state: 'provisioned' });
    s.detached = true;
    s.needsAttach = true;
    expect(decide(s)).toEqual({ kind: 'operation', op: 'enroll', state: 'provisioned', adopt: true });
    const available = state({ spec: spec(), state: 'available' });
    available.detached = true;
    available.needsAttach = true;
    expect(decide(available)).toEqual({ kind: 'operation', op: 'enroll', state: 'available' });
  });

  it("deletes as Metal3 does: without power off or deprovisioning, unless deleteAction is delay", () => {
    const s = detached({ spec: spec({ image }), state: 'provisioned', deleteRequested: true });
    s.detached = true;
    expect(decide(s)).toEqual({ kind: 'operation', op: 'delete', state: 'deleting' });
    // The annotation alone (not detached yet) already means "do not deprovision".
    expect(decide(detached({ spec: spec({ image }), state: 'provisioned', ID: 'n', deleteRequested: true }))).toEqual({ kind: 'operation', op: 'delete', state: 'deleting' });
    const delayed = detached({ spec: spec({ image }), state: 'provisioned', deleteRequested: true }, { deleteAction: 'delay', force: false });
    delayed.detached = true;
    expect(decide(delayed)).toEqual({ kind: 'wait' });
    // Annotation removed: attach first, then the ordinary delete (deprovision).
    delete delayed.directives;
    expect(decide(delayed)).toEqual({ kind: 'operation', op: 'enroll', state: 'provisioned', adopt: true });
    delayed.detached = false;
    delayed.needsAttach = false;
    delayed.registered = registrationFingerprint(delayed.spec!);
    expect(decide(delayed)).toEqual({ kind: 'operation', op: 'deprovision', state: 'deprovisioning' });
  });
});

describe('inspection annotations and spec.inspectionMode', () => {
  it('disabled (annotation or spec) skips inspecting after registration', () => {
    const s = state({ spec: spec(), state: 'registering' });
    expect(inspectionMode(s)).toBe('agent');
    s.directives = { inspectionDisabled: true };
    expect(inspectionMode(s)).toBe('disabled');
    expect(nextStateAfter('enroll', 'registering', s)).toBe('preparing');
    const bySpec = state({ spec: spec({ inspectionMode: 'disabled' }), state: 'registering' });
    expect(nextStateAfter('enroll', 'registering', bySpec)).toBe('preparing');
    // `fast` is inspected (another path, same state machine).
    expect(nextStateAfter('enroll', 'registering', state({ spec: spec({ inspectionMode: 'fast' }), state: 'registering' }))).toBe('inspecting');
  });

  it('inspection disabled while the host is inspecting moves it on to preparing, cancelling the running inspection', () => {
    const s = state({ spec: spec(), state: 'inspecting', ID: 'node' });
    expect(decide(s)).toMatchObject({ op: 'inspect' });
    expect(interruptReason(s, 'inspect')).toBeUndefined();
    s.spec = spec({ inspectionMode: 'disabled' });
    expect(decide(s)).toEqual({ kind: 'enter', state: 'preparing' });
    expect(interruptReason(s, 'inspect')).toBe('the desired state changed');
    const annotated = state({ spec: spec(), state: 'inspecting', ID: 'node' });
    annotated.directives = { inspectionDisabled: true };
    expect(decide(annotated)).toEqual({ kind: 'enter', state: 'preparing' });
  });

  it('a re-inspection request inspects an available host once', () => {
    const s = state({ spec: spec(), state: 'available' });
    s.inspectionRequested = true;
    expect(decide(s)).toEqual({ kind: 'operation', op: 'inspect', state: 'inspecting' });
    s.inspectionRequested = false;
    expect(decide(s)).toEqual({ kind: 'wait' });
  });
});

describe('credentials', () => {
  it('registers again when the Secret has a version that has not worked yet', () => {
    const s = state({ spec: spec(), state: 'provisioned' });
    s.spec = spec({ image: { url: 'http://x/i', checksum: 'a'.repeat(32) } });
    s.registered = registrationFingerprint(s.spec);
    s.directives = { credentials: { name: 'n0-bmc-secret', namespace: 'ns', version: '7' } };
    expect(credentialsChanged(s)).toBe(true);
    expect(decide(s)).toEqual({ kind: 'operation', op: 'enroll', state: 'provisioned' });
    s.status.goodCredentials = { credentials: { name: 'n0-bmc-secret', namespace: 'ns' }, credentialsVersion: '7' };
    expect(decide(s)).toEqual({ kind: 'wait' });
    // A version for another Secret than the spec names says nothing.
    s.directives = { credentials: { name: 'old-secret', namespace: 'ns', version: '9' } };
    expect(credentialsChanged(s)).toBe(false);
  });
});

describe('restored status', () => {
  it('registers first in any state; a provisioned host is adopted, not inspected or deployed', () => {
    const s = state({ spec: spec({ image: { url: 'http://x/i', checksum: 'a'.repeat(32) } }), state: 'provisioned', ID: 'old' });
    s.needsAttach = true;
    expect(decide(s)).toEqual({ kind: 'operation', op: 'enroll', state: 'provisioned', adopt: true });
    const inspecting = state({ spec: spec(), state: 'inspecting', ID: 'old' });
    inspecting.needsAttach = true;
    expect(decide(inspecting)).toEqual({ kind: 'operation', op: 'enroll', state: 'inspecting' });
    expect(nextStateAfter('enroll', 'inspecting', inspecting)).toBe('inspecting');
  });
});

describe('customDeploy.method', () => {
  const custom = () => spec({ customDeploy: { method: 'install_coreos' } });
  it('provisions an available host with a method and no image', () => {
    const s = state({ spec: custom(), state: 'available' });
    expect(decide(s)).toEqual({ kind: 'operation', op: 'provision', state: 'provisioning' });
    s.status.provisioning.state = 'provisioned';
    expect(decide(s).kind).not.toBe('operation');
    s.status.provisioning.state = 'provisioning';
    expect(decide(s)).toEqual({ kind: 'operation', op: 'provision', state: 'provisioning' });
  });

  it('an empty method asks for nothing, as in Metal3', () => {
    const s = state({ spec: spec({ customDeploy: { method: '' } }), state: 'available' });
    expect(decide(s).kind).not.toBe('operation');
  });
});

describe("Metal3's legacy provisioning states in a restored status", () => {
  it('match profile goes on to preparing, ready to available', () => {
    expect(decide(state({ spec: spec(), state: 'match profile' }))).toEqual({ kind: 'enter', state: 'preparing' });
    expect(decide(state({ spec: spec(), state: 'ready' }))).toEqual({ kind: 'enter', state: 'available' });
  });
});
