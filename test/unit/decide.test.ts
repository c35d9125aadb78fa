import { interruptReason } from '../../workflows/host/interrupt';
import { describe, expect, it } from 'vitest';
import { credentialsChanged, CROSS_STATE_RULES, decide, deleteGiveUp, DELETE_RETRY_LIMIT, detachPending, HANDLERS, inspectionMode, MANAGED_RULES, nextStateAfter, offlineHoldsProvisioning, registrationFingerprint, specConflict, type Decision } from '../../workflows/host/decide';
import type { HostState } from '../../contracts/host';
import type { ProvisioningState } from '../../model/host';
import type { HostDirectives } from '../../contracts/host';
import { hostState, testSpec } from '../support/host-state';

const spec = testSpec;
const state = hostState;

const IMAGE = { url: 'http://x/i.qcow2', checksum: 'a'.repeat(64) };

/** One row per handler case: the host, and what its state's handler decides. */
const TABLE: [ProvisioningState, string, () => HostState, Decision][] = [
  ['', 'registers', () => state({ spec: spec() }), { kind: 'operation', op: 'enroll', state: 'registering' }],
  ['unmanaged', 'registers once a BMC is given', () => state({ spec: spec(), state: 'unmanaged' }), { kind: 'operation', op: 'enroll', state: 'registering' }],
  ['registering', 'registers', () => state({ spec: spec(), state: 'registering' }), { kind: 'operation', op: 'enroll', state: 'registering' }],
  ['inspecting', 'inspects', () => state({ spec: spec(), state: 'inspecting' }), { kind: 'operation', op: 'inspect', state: 'inspecting', permit: true }],
  ['match profile', 'goes on to preparing', () => state({ spec: spec(), state: 'match profile' }), { kind: 'enter', state: 'preparing' }],
  ['ready', 'is read as available', () => state({ spec: spec(), state: 'ready' }), { kind: 'enter', state: 'available' }],
  ['preparing', 'prepares', () => state({ spec: spec(), state: 'preparing' }), { kind: 'operation', op: 'prepare', state: 'preparing' }],
  ['preparing', 'cleans when a clean is asked', () => Object.assign(state({ spec: spec(), state: 'preparing' }), { cleanRequest: { request: { steps: [] }, id: 1, at: 't' } }), { kind: 'operation', op: 'clean', state: 'preparing' }],
  ['available', 'provisions an image', () => state({ spec: spec({ image: IMAGE }), state: 'available' }), { kind: 'operation', op: 'provision', state: 'provisioning', recordAttempt: true, permit: true }],
  ['available', 'registers again when BMC settings changed', () => Object.assign(state({ spec: spec(), state: 'available' }), { registered: 'old' }), { kind: 'operation', op: 'enroll', state: 'available' }],
  ['available', 'waits with nothing to deploy and power as asked', () => state({ spec: spec(), state: 'available' }), { kind: 'wait' }],
  ['available', 'follows spec.online without an image', () => state({ spec: spec({ online: false }), state: 'available' }), { kind: 'operation', op: 'power', state: 'available', power: { on: false, mode: 'soft' } }],
  ['provisioning', 'provisions', () => state({ spec: spec({ image: IMAGE }), state: 'provisioning' }), { kind: 'operation', op: 'provision', state: 'provisioning', permit: true }],
  ['provisioning', 'deprovisions a failed deploy, counted', () => {
    const s = state({ spec: spec({ image: IMAGE }), state: 'provisioning' });
    Object.assign(s.status, { operationalStatus: 'error', errorType: 'provisioning error', errorMessage: 'deploy failed', errorCount: 1 });
    return s;
  }, { kind: 'operation', op: 'deprovision', state: 'deprovisioning', failedDeploy: true, permit: true }],
  ['provisioned', 'waits while the image stays', () => state({ spec: spec({ image: IMAGE }), state: 'provisioned' }), { kind: 'wait' }],
  ['provisioned', 'deprovisions when the image is removed', () => state({ spec: spec(), state: 'provisioned' }), { kind: 'operation', op: 'deprovision', state: 'deprovisioning', permit: true }],
  ['externally provisioned', 'powers on as spec.online asks', () => state({ spec: spec({ externallyProvisioned: true }), state: 'externally provisioned', poweredOn: false }), { kind: 'operation', op: 'power', state: 'externally provisioned', power: { on: true } }],
  ['deprovisioning', 'deprovisions', () => state({ spec: spec(), state: 'deprovisioning' }), { kind: 'operation', op: 'deprovision', state: 'deprovisioning', permit: true }],
  ['powering off before delete', 'waits (only reached with a delete, a cross-state rule)', () => state({ spec: spec(), state: 'powering off before delete' }), { kind: 'wait' }],
  ['deleting', 'waits (only reached with a delete, a cross-state rule)', () => state({ spec: spec(), state: 'deleting' }), { kind: 'wait' }],
];

describe('the state handlers (HANDLERS)', () => {
  it('has at least one row of this table per state', () => {
    expect(new Set(TABLE.map(([st]) => st))).toEqual(new Set(Object.keys(HANDLERS)));
  });

  it.each(TABLE)('%s: %s', (_state, _what, host, expected) => {
    expect(decide(host())).toEqual(expected);
  });
});

describe('the cross-state rules', () => {
  it('are asked in this order, before the handler', () => {
    expect(CROSS_STATE_RULES.map((r) => r.name)).toEqual(['paused', 'rebootServedByOff', 'settingsHeldTold', 'siteMoves', 'giveUpCleaningUp', 'metal3Transition', 'customDeployRedeploys', 'nodeLostRegisters', 'deleteSteps']);
    expect(MANAGED_RULES.map((r) => r.name)).toEqual(['detachOrAttach']);
  });

  it('a delete beats the state handler, a lost node beats the delete', () => {
    const s = state({ spec: spec({ image: IMAGE }), state: 'provisioned', deleteRequested: true });
    expect(decide(s)).toEqual({ kind: 'operation', op: 'deprovision', state: 'deprovisioning', permit: true });
    s.nodeLost = { nodeId: 'n', at: 't' };
    expect(decide(s)).toEqual({ kind: 'operation', op: 'enroll', state: 'provisioned', adopt: true });
  });

  it('pause beats everything, a delete included', () => {
    const s = state({ spec: spec({ image: IMAGE }), state: 'provisioned', deleteRequested: true });
    s.paused = { reason: 'test', since: 't' };
    expect(decide(s)).toEqual({ kind: 'pause' });
  });

  it('a one-shot reboot of a host held off is served by its being off, then decided again', () => {
    const s = state({ spec: spec({ image: IMAGE }), state: 'provisioned', poweredOn: false });
    s.power = { holds: { maint: 'soft' }, seq: 2, reboot: { mode: 'soft', api: true, annotation: false } };
    const d = decide(s);
    expect(d).toMatchObject({ kind: 'settle', power: { holds: { maint: 'soft' }, seq: 3 } });
    expect(d.kind === 'settle' && d.power?.reboot).toBeUndefined();
    s.power = d.kind === 'settle' ? d.power : s.power;
    expect(decide(s)).toEqual({ kind: 'wait' });
  });

  it('tells why changed settings wait once per reason, and forgets it when nothing waits', () => {
    const s = state({ spec: spec({ image: IMAGE, raid: { softwareRAIDVolumes: [{ level: '1' }] } }), state: 'provisioned' });
    const d = decide(s);
    expect(d).toMatchObject({ kind: 'tell', held: expect.stringMatching(/^spec\.raid changed while the host is provisioned/) });
    s.heldTold = d.kind === 'tell' ? d.held : undefined;
    expect(decide(s)).toEqual({ kind: 'wait' });
    s.spec = spec({ image: IMAGE });
    expect(decide(s)).toEqual({ kind: 'tell', held: undefined });
  });

  it('a power off for spec.online false is soft, hard after a failure; a request keeps its mode', () => {
    const s = state({ spec: spec({ image: IMAGE, online: false }), state: 'provisioned' });
    expect(decide(s)).toEqual({ kind: 'operation', op: 'power', state: 'provisioned', power: { on: false, mode: 'soft' } });
    s.status.errorCount = 1;
    expect(decide(s)).toEqual({ kind: 'operation', op: 'power', state: 'provisioned', power: { on: false, mode: 'hard' } });
  });

  it('asks for a provisioning permit for inspect, provision and deprovision over a network boot only', () => {
    expect(decide(state({ spec: spec({ image: IMAGE }), state: 'provisioning' }))).toMatchObject({ permit: true });
    const vmedia = spec({ image: IMAGE, bmc: { address: 'redfish-virtualmedia://127.0.0.1/redfish/v1/Systems/1', credentialsName: 'x' } });
    expect(decide(state({ spec: vmedia, state: 'provisioning' }))).toEqual({ kind: 'operation', op: 'provision', state: 'provisioning' });
    expect(decide(state({ spec: spec(), state: 'preparing' }))).toEqual({ kind: 'operation', op: 'prepare', state: 'preparing' });
  });

  it('a Metal3 transition beats the handler', () => {
    const s = state({ spec: spec({ image: { ...IMAGE, url: 'http://x/other' } }), state: 'provisioned' });
    s.status.provisioning.image = IMAGE;
    expect(decide(s)).toEqual({ kind: 'operation', op: 'deprovision', state: 'deprovisioning', permit: true });
  });
});

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
    expect(decide(state({ spec: spec({ image }), state: 'available' }))).toEqual({ kind: 'operation', op: 'provision', state: 'provisioning', recordAttempt: true, permit: true });
    expect(decide(state({ spec: spec({ image }), state: 'provisioned' }))).toEqual({ kind: 'wait' });
    expect(decide(state({ spec: spec(), state: 'provisioned' }))).toEqual({ kind: 'operation', op: 'deprovision', state: 'deprovisioning', permit: true });
  });

  it('provisions an available host only while spec.online is true (BMO NeedsProvisioning), ', () => {
    const image = { url: 'http://x/i.qcow2', checksum: 'a'.repeat(64) };
    const off = state({ spec: spec({ image, online: false }), state: 'available', poweredOn: false });
    expect(offlineHoldsProvisioning(off)).toBe(true);
    expect(decide(off)).toEqual({ kind: 'wait' });
    // Still powered on: it is powered off, not provisioned.
    const offButOn = state({ spec: spec({ image, online: false }), state: 'available', poweredOn: true });
    expect(decide(offButOn)).toMatchObject({ kind: 'operation', op: 'power', state: 'available' });
    const on = state({ spec: spec({ image, online: true }), state: 'available', poweredOn: false });
    expect(offlineHoldsProvisioning(on)).toBe(false);
    expect(decide(on)).toEqual({ kind: 'operation', op: 'provision', state: 'provisioning', recordAttempt: true, permit: true });
    // A provisioned host with online false stays provisioned (powered off), as before.
    expect(offlineHoldsProvisioning(state({ spec: spec({ image, online: false }), state: 'provisioned' }))).toBe(false);
  });

  it('undoes a provisioning whose image was removed while it waited to retry', () => {
    const image = { url: 'http://x/i.qcow2', checksum: 'a'.repeat(64) };
    expect(decide(state({ spec: spec({ image }), state: 'provisioning' }))).toEqual({ kind: 'operation', op: 'provision', state: 'provisioning', permit: true });
    expect(decide(state({ spec: spec(), state: 'provisioning' }))).toEqual({ kind: 'operation', op: 'deprovision', state: 'deprovisioning', permit: true });
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
    // As BMO: a host still registering is deleted without a power off.
    expect(decide(state({ spec: spec(), state: 'registering', deleteRequested: true }))).toEqual({ kind: 'operation', op: 'delete', state: 'deleting' });
  });

  it("gives up cleaning up a host on delete after Metal3's retry count, ", () => {
    const failing = (st: Parameters<typeof state>[0], errorCount: number, errorType: 'provisioning error' | 'registration error' | 'power management error') => {
      const s = state({ spec: spec(), deleteRequested: true, ...st });
      Object.assign(s.status, { operationalStatus: 'error', errorCount, errorType, errorMessage: 'BMC unreachable' });
      return s;
    };
    // Within the retry count: the same step again.
    expect(deleteGiveUp(failing({ state: 'deprovisioning' }, DELETE_RETRY_LIMIT, 'provisioning error'))).toBeUndefined();
    expect(decide(failing({ state: 'deprovisioning' }, DELETE_RETRY_LIMIT, 'provisioning error'))).toMatchObject({ op: 'deprovision' });
    // Past it: deprovisioning skipped for the power off, then the power off for deleting.
    const deprov = failing({ state: 'deprovisioning' }, DELETE_RETRY_LIMIT + 1, 'provisioning error');
    expect(decide(deprov)).toMatchObject({ op: 'power', state: 'powering off before delete', gaveUp: { reason: 'DeprovisioningSkipped' } });
    expect(deleteGiveUp(deprov)!.message).toMatch(/^giving up on deprovisioning after 4 failures \(last: BMC unreachable\); .*clean it up by hand/);
    const off = failing({ state: 'powering off before delete' }, DELETE_RETRY_LIMIT + 2, 'power management error');
    expect(decide(off)).toMatchObject({ op: 'delete', state: 'deleting', gaveUp: { reason: 'PowerOffSkipped' } });
    // A host that cannot be registered (dead BMC, credentials gone, node lost) skips the power off too, before registering again.
    const unreachable = Object.assign(failing({ state: 'deprovisioning' }, 4, 'registration error'), { nodeLost: { nodeId: 'n', at: 't' } });
    expect(decide(unreachable)).toMatchObject({ op: 'delete', state: 'deleting' });
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
    expect(decide(s)).toEqual({ kind: 'operation', op: 'provision', state: 'provisioning', permit: true });
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
    expect(decide(delayed)).toEqual({ kind: 'operation', op: 'deprovision', state: 'deprovisioning', permit: true });
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

  it('a failed deploy still on record does not cut short the provisioning attempt under way', () => {
    const s = state({ spec: spec({ image: { url: 'http://127.0.0.1/i.qcow2', checksum: 'abc', checksumType: 'sha256', format: 'qcow2' } }), state: 'provisioning', ID: 'node' });
    Object.assign(s.status, { operationalStatus: 'error', errorType: 'provisioning error', errorMessage: 'provisioning failed 2 times, retry limit (2) reached' });
    expect(decide(s)).toMatchObject({ kind: 'operation', op: 'deprovision', failedDeploy: true });
    expect(interruptReason(s, 'provision')).toBeUndefined();
  });

  it('a re-inspection request inspects an available host once', () => {
    const s = state({ spec: spec(), state: 'available' });
    s.inspectionRequested = true;
    expect(decide(s)).toEqual({ kind: 'operation', op: 'inspect', state: 'inspecting', permit: true });
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
    expect(decide(s)).toEqual({ kind: 'operation', op: 'provision', state: 'provisioning', permit: true });
    s.status.provisioning.state = 'provisioned';
    expect(decide(s).kind).not.toBe('operation');
    s.status.provisioning.state = 'provisioning';
    expect(decide(s)).toEqual({ kind: 'operation', op: 'provision', state: 'provisioning', permit: true });
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
