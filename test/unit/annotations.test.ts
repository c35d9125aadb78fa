import { describe, expect, it } from 'vitest';
import { ANNOTATIONS, parseAnnotations } from '../../k8s/controller/annotations';
import { emptyStatus } from '../../types/host';

describe('Metal3 annotations', () => {
  it('reads absent annotations as no request', () => {
    expect(parseAnnotations(undefined)).toEqual({ value: { paused: false }, errors: [] });
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
});
