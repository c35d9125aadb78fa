import { describe, expect, it } from 'vitest';
import { decide, nextStateAfter, registrationFingerprint } from '../../workflows/host/decide';
import { DEFAULT_HOST_OPTIONS, type HostState } from '../../contracts/host';
import {
  applyPowerRequestChange,
  checkPowerRequestChange,
  emptyPowerRequests,
  offlinePowerStep,
  powerGoal,
  rebootServed,
  settlePowerRequests,
  type PowerRequests,
} from '../../workflows/host/rules/power-requests';
import { powerPath } from '../../workflows/host/provisioners/power';
import { validateHostSpec } from '../../model/validate';
import { emptyStatus, type HostSpec, type ProvisioningState } from '../../model/host';

const spec = (over: Partial<HostSpec> = {}): HostSpec => ({
  bmc: { address: 'fake://n0', credentialsName: 'n0-bmc-secret' },
  bootMACAddress: '52:54:00:00:00:01',
  online: true,
  ...over,
});

function host(over: { state?: ProvisioningState; spec?: HostSpec; poweredOn?: boolean; power?: PowerRequests } = {}): HostState {
  const status = emptyStatus();
  status.provisioning.state = over.state ?? 'provisioned';
  status.provisioning.ID = 'node-1';
  status.poweredOn = over.poweredOn ?? true;
  const s = over.spec ?? spec({ image: { url: 'http://i/x.qcow2', checksum: 'a'.repeat(64) } });
  return {
    ref: { namespace: 'ns', name: 'n0' },
    spec: s,
    generation: 1,
    registered: registrationFingerprint(s),
    status,
    deleteRequested: false,
    opSeq: 0,
    operations: [],
    options: DEFAULT_HOST_OPTIONS,
    power: over.power,
  };
}

const apply = (p: PowerRequests | undefined, ...changes: Parameters<typeof applyPowerRequestChange>[1][]) =>
  changes.reduce<PowerRequests | undefined>((acc, c) => applyPowerRequestChange(acc, c), p)!;

describe('power requests (Metal3 reboot annotation semantics)', () => {
  it('a one-shot reboot defaults to soft and merges with one already waiting, hard winning', () => {
    const p = apply(undefined, { reboot: {} });
    expect(p.reboot).toEqual({ mode: 'soft', api: true, annotation: false });
    expect(apply(p, { reboot: { mode: 'hard' } }).reboot?.mode).toBe('hard');
    expect(apply(p, { reboot: { mode: 'hard' } }, { reboot: { mode: 'soft' } }).reboot?.mode).toBe('hard');
  });

  it('the one-shot annotation is served once: pending, done after the reboot, forgotten when removed', () => {
    let p = apply(undefined, { rebootAnnotation: { mode: 'hard' } });
    expect(p.annotation).toBe('pending');
    expect(p.reboot).toEqual({ mode: 'hard', api: false, annotation: true });
    // the controller sends the same annotation again: nothing changes
    expect(apply(p, { rebootAnnotation: { mode: 'hard' } }).seq).toBe(p.seq);
    p = rebootServed(p)!;
    expect(p.reboot).toBeUndefined();
    expect(p.annotation).toBe('done');
    // still present (not yet removed by the controller): never a second reboot
    expect(apply(p, { rebootAnnotation: { mode: 'soft' } }).reboot).toBeUndefined();
    p = apply(p, { rebootAnnotation: null });
    expect(p.annotation).toBeUndefined();
    // a new annotation is a new request
    expect(apply(p, { rebootAnnotation: {} }).reboot?.mode).toBe('soft');
  });

  it('removing the annotation before its reboot ran cancels it, unless the API asked too', () => {
    const p = apply(undefined, { rebootAnnotation: {} }, { rebootAnnotation: null });
    expect(p.reboot).toBeUndefined();
    const both = apply(undefined, { rebootAnnotation: {} }, { reboot: { mode: 'hard' } }, { rebootAnnotation: null });
    expect(both.reboot).toEqual({ mode: 'hard', api: true, annotation: false });
  });

  it('keyed requests are set, changed, released; onlyThese replaces the set', () => {
    let p = apply(undefined, { holdOff: { a: 'soft', b: 'hard' } });
    expect(p.holds).toEqual({ a: 'soft', b: 'hard' });
    p = apply(p, { release: ['b'] });
    expect(p.holds).toEqual({ a: 'soft' });
    p = apply(p, { holdOff: { c: 'soft' }, onlyThese: true });
    expect(p.holds).toEqual({ c: 'soft' });
    expect(apply(p, { holdOff: {}, onlyThese: true }).holds).toEqual({});
  });

  it('rejects a bad mode, a bad key, unknown fields, and holds on a host that must never power off', () => {
    expect(checkPowerRequestChange({ reboot: { mode: 'gentle' } })[0]).toMatchObject({ field: 'reboot.mode' });
    expect(checkPowerRequestChange({ reboot: { mode: 'gentle' } })[0]!.reason).toMatch(/"gentle" is not a reboot mode: use "soft"/);
    expect(checkPowerRequestChange({ holdOff: { 'bad key': 'soft' } })[0]!.field).toBe('holdOff["bad key"]');
    expect(checkPowerRequestChange({ holdOff: { ok: 'medium' } })[0]!.field).toBe('holdOff["ok"]');
    expect(checkPowerRequestChange({ release: ['-x'] })[0]!.field).toBe('release[0]');
    expect(checkPowerRequestChange({ rebot: {} })[0]).toMatchObject({ field: 'rebot' });
    // A host with spec.disablePowerOff takes keys too (Metal3 reboots it once per key: applyPowerRequestChange).
    expect(checkPowerRequestChange({ holdOff: { a: 'soft' } })).toEqual([]);
    expect(checkPowerRequestChange({ reboot: { mode: 'hard' }, rebootAnnotation: null, holdOff: { 'x.y_z-1': 'hard' }, release: ['a'], onlyThese: true })).toEqual([]);
  });
});

describe('the power goal in steady states', () => {
  it('follows spec.online without requests (hard, as before requests existed)', () => {
    expect(powerGoal(true, spec({ online: false }), undefined)).toEqual({ action: 'power', on: false });
    expect(powerGoal(false, spec(), undefined)).toEqual({ action: 'power', on: true });
    expect(powerGoal(true, spec(), emptyPowerRequests())).toEqual({ action: 'none' });
  });

  it('keyed requests keep the host off, hard winning when several ask, and it powers on once all are released', () => {
    const p = apply(undefined, { holdOff: { a: 'soft', b: 'hard' } });
    expect(powerGoal(true, spec(), p)).toEqual({ action: 'power', on: false, mode: 'hard' });
    expect(powerGoal(true, spec(), apply(p, { release: ['b'] }))).toEqual({ action: 'power', on: false, mode: 'soft' });
    expect(powerGoal(false, spec(), p)).toEqual({ action: 'none' });
    expect(powerGoal(false, spec(), apply(p, { release: ['a', 'b'] }))).toEqual({ action: 'power', on: true });
  });

  it('a waiting one-shot reboot runs; while the host is held off it is served by being off', () => {
    const p = apply(undefined, { reboot: { mode: 'hard' } });
    expect(powerGoal(true, spec(), p)).toEqual({ action: 'reboot', mode: 'hard' });
    const held = apply(p, { holdOff: { k: 'soft' } });
    expect(powerGoal(true, spec(), held)).toEqual({ action: 'power', on: false, mode: 'soft' });
    expect(settlePowerRequests(true, spec(), held)?.reboot).toBeDefined();
    expect(settlePowerRequests(false, spec(), held)?.reboot).toBeUndefined();
  });

  it('with disablePowerOff, keyed requests are ignored and reboots still run', () => {
    const s = spec({ disablePowerOff: true });
    expect(powerGoal(true, s, apply(undefined, { holdOff: { a: 'hard' } }))).toEqual({ action: 'none' });
    expect(powerGoal(true, s, apply(undefined, { reboot: {} }))).toEqual({ action: 'reboot', mode: 'soft' });
  });
});

describe('spec.online false as Metal3 powers off (patch soft-power-off)', () => {
  it('is soft, hard only once the host has failed; a step with a mode or a power on is left alone', () => {
    expect(offlinePowerStep({ on: false }, 0)).toEqual({ on: false, mode: 'soft' });
    expect(offlinePowerStep({ on: false }, 2)).toEqual({ on: false, mode: 'hard' });
    expect(offlinePowerStep({ on: false, mode: 'hard' }, 0)).toBeUndefined();
    expect(offlinePowerStep({ on: false, mode: 'soft' }, 3)).toBeUndefined();
    expect(offlinePowerStep({ on: true }, 0)).toBeUndefined();
    expect(offlinePowerStep(undefined, 0)).toBeUndefined();
  });
});

describe('decide with power requests', () => {
  it('decides a reboot operation in provisioned, externally provisioned and available', () => {
    const power = apply(undefined, { reboot: { mode: 'hard' } });
    expect(decide(host({ power }))).toEqual({ kind: 'operation', op: 'reboot', state: 'provisioned', power: { on: true, mode: 'hard' } });
    expect(decide(host({ power, state: 'externally provisioned', spec: spec({ externallyProvisioned: true }) }))).toMatchObject({ op: 'reboot' });
    expect(decide(host({ power, state: 'available', spec: spec() }))).toMatchObject({ op: 'reboot', state: 'available' });
    expect(nextStateAfter('reboot', 'provisioned', host())).toBe('provisioned');
  });

  it('provisioning comes before a request on an available host', () => {
    const power = apply(undefined, { holdOff: { a: 'soft' } });
    expect(decide(host({ power, state: 'available' }))).toMatchObject({ op: 'provision' });
  });

  it('holds a provisioned host off with a soft power operation, then waits', () => {
    const power = apply(undefined, { holdOff: { remediation: 'soft' } });
    expect(decide(host({ power }))).toEqual({ kind: 'operation', op: 'power', state: 'provisioned', power: { on: false, mode: 'soft' } });
    expect(decide(host({ power, poweredOn: false }))).toEqual({ kind: 'wait' });
  });

  it('routes power to Ironic when it manages the node, to the BMC otherwise', () => {
    expect(powerPath(spec(), 'node-1')).toBe('ironic');
    expect(powerPath(spec({ provisioner: 'direct' }), 'node-1')).toBe('bmc');
    expect(powerPath(spec(), undefined)).toBe('bmc');
  });
});

describe('spec rules for the power fields', () => {
  const ref = { namespace: 'ns', name: 'n0' };
  it('fast inspection needs a Redfish BMC', () => {
    const ipmi = validateHostSpec(ref, spec({ bmc: { address: 'ipmi://10.0.0.1', credentialsName: 'c' }, inspectionMode: 'fast' }));
    expect(ipmi.ok).toBe(false);
    if (!ipmi.ok) {
      expect(ipmi.errors[0]!.field).toBe('spec.inspectionMode');
      expect(ipmi.errors[0]!.reason).toMatch(/BMC type ipmi has none: use "agent" or "disabled"/);
    }
    expect(validateHostSpec(ref, spec({ bmc: { address: 'redfish://b/redfish/v1/Systems/1', credentialsName: 'c' }, inspectionMode: 'fast' })).ok).toBe(true);
  });

  it('disablePowerOff needs online', () => {
    const r = validateHostSpec(ref, spec({ disablePowerOff: true, online: false }));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors[0]).toMatchObject({ field: 'spec.online' });
  });
});

describe('reboot request ids', () => {
  it('a remembered id is not a new reboot; ids are bounded; without remembering, ids change nothing', () => {
    let p = applyPowerRequestChange(undefined, { reboot: { mode: 'soft', requestId: 'a' } }, true);
    expect(p.reboot?.mode).toBe('soft');
    p = rebootServed(p)!;
    const served = applyPowerRequestChange(p, { reboot: { mode: 'hard', requestId: 'a' } }, true);
    expect(served.reboot).toBeUndefined();
    expect(served.seq).toBe(p.seq);
    expect(applyPowerRequestChange(p, { reboot: { requestId: 'b' } }, true).reboot).toBeDefined();
    // Hosts recorded before ids existed replay without them: every reboot is new.
    expect(applyPowerRequestChange(p, { reboot: { requestId: 'a' } }, false).reboot).toBeDefined();
    expect(applyPowerRequestChange(p, { reboot: { requestId: 'a' } }, false).requestIds).toEqual(['a']);
    let many = p;
    for (let i = 0; i < 40; i++) many = rebootServed(applyPowerRequestChange(many, { reboot: { requestId: `k${i}` } }, true))!;
    expect(many.requestIds).toHaveLength(32);
    expect(many.requestIds?.[0]).toBe('k8');
    expect(applyPowerRequestChange(many, { reboot: { requestId: 'k7' } }, true).reboot).toBeDefined();
  });

  it('checks the id and the reboot object', () => {
    expect(checkPowerRequestChange({ reboot: { requestId: 'ok-1/2' } })).toEqual([]);
    expect(checkPowerRequestChange({ reboot: { requestId: '' } })).toEqual([{ field: 'reboot.requestId', reason: 'must be 1-255 visible ASCII characters, no spaces' }]);
    expect(checkPowerRequestChange({ reboot: { requestId: 7 } })[0]?.field).toBe('reboot.requestId');
    expect(checkPowerRequestChange({ rebootAnnotation: { requestId: 'x' } })).toEqual([{ field: 'rebootAnnotation.requestId', reason: 'is not accepted (accepted: mode)' }]);
  });
});

describe('keyed power-off requests on a host with spec.disablePowerOff (Metal3 reboots it)', () => {
  it('asks one reboot per key added (hard wins), never again for a key already held, and never holds the host off', () => {
    const noOff = spec({ disablePowerOff: true });
    const p = applyPowerRequestChange(undefined, { holdOff: { a: 'soft', b: 'hard' }, onlyThese: true }, false, true);
    expect(p.reboot).toEqual({ mode: 'hard', api: true, annotation: false });
    expect(p.holds).toEqual({ a: 'soft', b: 'hard' });
    expect(powerGoal(true, noOff, p)).toEqual({ action: 'reboot', mode: 'hard' });
    // The controller sends the full set again: nothing new, no second reboot once served.
    const served = rebootServed(p)!;
    expect(applyPowerRequestChange(served, { holdOff: { a: 'soft', b: 'hard' }, onlyThese: true }, false, true).reboot).toBeUndefined();
    expect(powerGoal(true, noOff, served)).toEqual({ action: 'none' });
  });
});
