import { describe, expect, it } from 'vitest';
import { applyDirectives, credentialsAttempt, requestInspection, restoreStatus } from '../../workflows/host/directives';
import type { HostState } from '../../contracts/host';
import { emptyStatus, type HostSpec, type ProvisioningState } from '../../model/host';
import { hostState, testSpec } from '../support/host-state';

const spec = testSpec;
/** Past enrollment (opSeq 3) unless new; powered off as a fresh status is. */
const host = (state: ProvisioningState = '', s: HostSpec | undefined = spec()): HostState =>
  hostState({ state, spec: s, poweredOn: false, opSeq: state === '' ? 0 : 3 });

describe('applyDirectives', () => {
  it('is idempotent: the same directives twice change nothing the second time', () => {
    const s = host('available');
    expect(applyDirectives(s, { inspectionDisabled: true }).result.changed).toBe(true);
    expect(applyDirectives(s, { inspectionDisabled: true })).toEqual({ result: { changed: false }, events: [] });
  });

  it('puts external hardware details in status.hardware and keeps them when the annotation goes', () => {
    const s = host('available');
    const hw = { cpu: { count: 4 }, ramMebibytes: 4096 };
    const { events } = applyDirectives(s, { inspectionDisabled: true, hardwareDetails: hw });
    expect(s.status.hardware).toEqual(hw);
    expect(events.map((e) => e.reason)).toEqual(['UpdateHardwareDetails']);
    applyDirectives(s, { inspectionDisabled: true });
    expect(s.status.hardware).toEqual(hw);
  });

  it('says why a requested detach waits', () => {
    const s = host('provisioning');
    const { result, events } = applyDirectives(s, { detached: { deleteAction: 'delete', force: false } });
    expect(result.detachPending).toMatch(/provisioning/);
    expect(events.map((e) => e.reason)).toEqual(['DetachPending']);
    expect(applyDirectives(host('provisioned'), { detached: { deleteAction: 'delete', force: false } }).result.detachPending).toBeUndefined();
  });
});

describe('restoreStatus', () => {
  it('takes the status of a host that has none, and asks to attach (register, adopt) first', () => {
    const s = host('');
    const status = emptyStatus();
    status.provisioning = { state: 'provisioned', ID: 'old', image: { url: 'http://x/i', checksum: 'a'.repeat(32) } };
    const r = restoreStatus(s, status, '2026-01-01T00:00:00Z');
    expect(r.restored).toBe(true);
    expect(s.status.provisioning.state).toBe('provisioned');
    expect(s.status.lastUpdated).toBe('2026-01-01T00:00:00Z');
    expect(s.needsAttach).toBe(true);
    expect(s.registered).toBeUndefined();
  });

  it('leaves a host that already has a status alone', () => {
    const s = host('available');
    const r = restoreStatus(s, { ...emptyStatus(), provisioning: { state: 'provisioned', ID: 'x' } }, 'now');
    expect(r).toMatchObject({ restored: false, reason: expect.stringMatching(/already has a status/) });
    expect(s.status.provisioning.state).toBe('available');
  });
});

describe('requestInspection', () => {
  it('marks an available host for one more inspection', () => {
    const s = host('available');
    expect(requestInspection(s)).toMatchObject({ accepted: true, pending: true });
    expect(s.inspectionRequested).toBe(true);
    expect(requestInspection(s).events).toEqual([]);
  });
  it('needs nothing for a host that is still to be inspected, and refuses when inspection is disabled', () => {
    expect(requestInspection(host('inspecting'))).toMatchObject({ accepted: true, pending: false });
    const disabled = host('available', spec({ inspectionMode: 'disabled' }));
    expect(() => requestInspection(disabled)).toThrow(/inspection is disabled/);
  });
});

describe('credentialsAttempt', () => {
  it('records the Secret and version the controller saw, only for the Secret the spec names', () => {
    const s = host('available');
    expect(credentialsAttempt(s)).toBeUndefined();
    s.directives = { credentials: { name: 'n0-bmc-secret', namespace: 'ns', version: '42' } };
    expect(credentialsAttempt(s)).toEqual({ credentials: { name: 'n0-bmc-secret', namespace: 'ns' }, credentialsVersion: '42' });
    s.directives = { credentials: { name: 'other', namespace: 'ns', version: '43' } };
    expect(credentialsAttempt(s)).toBeUndefined();
  });
});
