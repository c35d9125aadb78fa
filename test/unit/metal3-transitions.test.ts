/** BMO's steady-state moves (externally provisioned, changed image URL, changed root device hints). */
import { describe, expect, it } from 'vitest';
import { decide, metal3Transition, nextStateAfter, registrationFingerprint } from '../../workflows/host/decide';
import { hostState, testSpec } from '../support/host-state';

const IMAGE = { url: 'http://images/a.qcow2', checksum: 'a'.repeat(64), checksumType: 'sha256' as const };
const OTHER = { url: 'http://images/b.qcow2', checksum: 'b'.repeat(64), checksumType: 'sha256' as const };

describe('metal3Transition', () => {
  it('a provisioned host whose image URL changed is deprovisioned (then provisioned again from available)', () => {
    const s = hostState({ state: 'provisioned', spec: testSpec({ image: OTHER }) });
    s.status.provisioning.image = IMAGE;
    expect(metal3Transition(s)).toEqual({ kind: 'operation', op: 'deprovision', state: 'deprovisioning' });
    expect(decide(s)).toEqual({ kind: 'operation', op: 'deprovision', state: 'deprovisioning', permit: true });
    const back = hostState({ state: 'available', spec: testSpec({ image: OTHER }) });
    expect(decide(back)).toMatchObject({ op: 'provision', state: 'provisioning' });
  });

  it('the same URL with another checksum is not a new image (as BMO compares URLs)', () => {
    const s = hostState({ state: 'provisioned', spec: testSpec({ image: { ...IMAGE, checksum: 'c'.repeat(64) } }) });
    s.status.provisioning.image = IMAGE;
    expect(metal3Transition(s)).toBeUndefined();
  });

  it('externallyProvisioned set on an available host: externally provisioned, no operation', () => {
    const s = hostState({ state: 'available', spec: testSpec({ externallyProvisioned: true }) });
    expect(metal3Transition(s)).toEqual({ kind: 'enter', state: 'externally provisioned' });
  });

  it('externallyProvisioned cleared: adopted as provisioned with the spec image, or cleaned back to available without one', () => {
    const s = hostState({ state: 'externally provisioned', spec: testSpec({ image: IMAGE }) });
    expect(metal3Transition(s)).toEqual({ kind: 'operation', op: 'enroll', state: 'provisioned', adopt: true, recordImage: IMAGE });
    expect(nextStateAfter('enroll', 'provisioned', s)).toBe('provisioned');
    const bare = hostState({ state: 'externally provisioned', spec: testSpec() });
    expect(metal3Transition(bare)).toEqual({ kind: 'operation', op: 'prepare', state: 'preparing' });
    expect(metal3Transition(hostState({ state: 'externally provisioned', spec: testSpec({ externallyProvisioned: true }) }))).toBeUndefined();
  });

  it('changed root device hints on an available host: registered again, through preparing', () => {
    const s = hostState({ state: 'available', spec: testSpec() });
    s.spec = testSpec({ rootDeviceHints: { deviceName: '/dev/sdb' } });
    expect(metal3Transition(s)).toEqual({ kind: 'operation', op: 'enroll', state: 'preparing' });
    expect(nextStateAfter('enroll', 'preparing', s)).toBe('preparing');
    // Other BMC changes stay a re-registration in place.
    const bmc = hostState({ state: 'available', spec: testSpec() });
    bmc.spec = testSpec({ bmc: { address: 'fake://n1', credentialsName: 'n0-bmc-secret' } });
    expect(metal3Transition(bmc)).toBeUndefined();
    expect(decide(bmc)).toEqual({ kind: 'operation', op: 'enroll', state: 'available' });
    // A fingerprint of another shape (an older run's) is not read as changed hints.
    const old = hostState({ state: 'available', spec: testSpec() });
    old.registered = JSON.stringify(JSON.parse(registrationFingerprint(testSpec())).slice(0, 6));
    expect(metal3Transition(old)).toBeUndefined();
  });

  it('never applies to a host being deleted, detached or whose node is lost', () => {
    const s = hostState({ state: 'provisioned', spec: testSpec({ image: OTHER }), deleteRequested: true });
    s.status.provisioning.image = IMAGE;
    expect(metal3Transition(s)).toBeUndefined();
    const lost = hostState({ state: 'available', spec: testSpec({ externallyProvisioned: true }) });
    lost.nodeLost = { nodeId: 'gone', at: '2026-11-23T00:00:00Z' };
    expect(metal3Transition(lost)).toBeUndefined();
  });
});
