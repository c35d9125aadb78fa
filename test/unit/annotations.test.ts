import { describe, expect, it } from 'vitest';
import { ANNOTATIONS, annotationSpecErrors, parseAnnotations } from '../../k8s/controller/annotations';
import { emptyStatus } from '../../types/host';

describe('Metal3 annotations', () => {
  it('reads absent annotations as no request', () => {
    expect(parseAnnotations(undefined)).toEqual({ value: { paused: false, powerOff: {} }, errors: [] });
  });

  it('pauses on presence, whatever the value (CAPM3 writes its own)', () => {
    expect(parseAnnotations({ [ANNOTATIONS.paused]: 'metal3.io/capm3' }).value.paused).toBe(true);
  });

  it('accepts detached empty or with a deleteAction, and rejects anything else', () => {
    expect(parseAnnotations({ [ANNOTATIONS.detached]: '' }).value.detached).toEqual({ deleteAction: 'delete' });
    expect(parseAnnotations({ [ANNOTATIONS.detached]: '{"deleteAction":"detach"}' }).value.detached).toEqual({ deleteAction: 'detach' });
    const bad = parseAnnotations({ [ANNOTATIONS.detached]: '{"deleteAction":"explode"}' });
    expect(bad.errors[0]!.reason).toMatch(/"delete" \| "detach"/);
    const notJson = parseAnnotations({ [ANNOTATIONS.detached]: '{oops' });
    expect(notJson.errors[0]!.field).toBe('metadata.annotations["baremetalhost.metal3.io/detached"]');
    expect(notJson.errors[0]!.reason).toMatch(/not valid JSON/);
  });

  it('accepts inspect "disabled" or empty, never a silent default', () => {
    expect(parseAnnotations({ [ANNOTATIONS.inspect]: 'disabled' }).value.inspect).toBe('disabled');
    expect(parseAnnotations({ [ANNOTATIONS.inspect]: '' }).value.inspect).toBe('requested');
    const bad = parseAnnotations({ [ANNOTATIONS.inspect]: 'Disabled' });
    expect(bad.value.inspect).toBeUndefined();
    expect(bad.errors[0]!.reason).toMatch(/"Disabled" is not accepted/);
  });

  it('validates a status to restore against the status schema', () => {
    const status = emptyStatus();
    status.provisioning = { state: 'provisioned', ID: 'abc' };
    expect(parseAnnotations({ [ANNOTATIONS.status]: JSON.stringify(status) }).value.restoreStatus?.provisioning.state).toBe('provisioned');
    const bad = parseAnnotations({ [ANNOTATIONS.status]: JSON.stringify({ ...status, provisioning: { state: 'flying', ID: '' } }) });
    expect(bad.errors.some((e) => e.field.endsWith('.provisioning.state'))).toBe(true);
  });

  it('validates external hardware details', () => {
    expect(parseAnnotations({ [ANNOTATIONS.hardwareDetails]: '{"cpu":{"count":8},"ramMebibytes":16384}' }).value.hardwareDetails).toEqual({ cpu: { count: 8 }, ramMebibytes: 16384 });
    const bad = parseAnnotations({ [ANNOTATIONS.hardwareDetails]: '{"ramMebibytes":"lots"}' });
    expect(bad.errors[0]!.field).toMatch(/hardwaredetails"\]\.ramMebibytes$/);
  });

  it('reads reboot.metal3.io (one-shot) and reboot.metal3.io/<key> (power off) as Metal3 does', () => {
    const r = parseAnnotations({
      [ANNOTATIONS.reboot]: '',
      'reboot.metal3.io/remediation': '{"mode":"hard"}',
      'reboot.metal3.io/upgrade': '{"mode":"soft","force":true}',
      'reboot.metal3.io/plain': '{}',
    });
    expect(r.errors).toEqual([]);
    expect(r.value.reboot).toEqual({ mode: 'soft' });
    expect(r.value.powerOff).toEqual({ remediation: 'hard', upgrade: 'soft', plain: 'soft' });
    expect(parseAnnotations({ [ANNOTATIONS.reboot]: '{"mode":"hard"}' }).value.reboot).toEqual({ mode: 'hard' });
  });

  it('rejects invalid JSON, an unknown mode and unknown fields: never read as soft', () => {
    const notJson = parseAnnotations({ [ANNOTATIONS.reboot]: '{mode: hard}' });
    expect(notJson.value.reboot).toBeUndefined();
    expect(notJson.errors[0]!.field).toBe('metadata.annotations["reboot.metal3.io"]');
    expect(notJson.errors[0]!.reason).toMatch(/not valid JSON/);
    const mode = parseAnnotations({ 'reboot.metal3.io/x': '{"mode":"Hard"}' });
    expect(mode.value.powerOff).toEqual({});
    expect(mode.errors[0]!.reason).toMatch(/mode "Hard" is not accepted: use "hard" or "soft"/);
    expect(parseAnnotations({ [ANNOTATIONS.reboot]: '"hard"' }).errors[0]!.reason).toMatch(/must be empty or \{"mode"/);
    expect(parseAnnotations({ [ANNOTATIONS.reboot]: '{"mod":"hard"}' }).errors[0]!.reason).toMatch(/unknown field "mod"/);
  });

  it('keyed power-off requests cannot hold a host with disablePowerOff', () => {
    const r = parseAnnotations({ 'reboot.metal3.io/k': '' });
    expect(annotationSpecErrors(r.value, { disablePowerOff: true })[0]!.field).toBe('metadata.annotations["reboot.metal3.io/k"]');
    expect(annotationSpecErrors(r.value, {})).toEqual([]);
  });
});
