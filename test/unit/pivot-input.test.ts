/** A pivot's input check (model/pivot.ts) and the verify step's comparison (activities/pivot/activities.ts). */
import { describe, expect, it } from 'vitest';
import { validatePivotInput } from '../../model/pivot';
import { targetMismatch } from '../../activities/pivot/activities';

const good = { name: 'to-mgmt', source: {}, target: { plane: 'mgmt' }, selector: { namespace: 'metal3' } };
const fields = (input: unknown) => {
  const r = validatePivotInput(input);
  return r.ok ? [] : r.errors.map((e) => e.field);
};

describe('validatePivotInput', () => {
  it('accepts a pivot to a registered plane, named by id', () => {
    expect(validatePivotInput(good)).toMatchObject({ ok: true });
    expect(validatePivotInput({ ...good, source: { plane: 'boot' } })).toMatchObject({ ok: true });
  });

  it('names each bad field', () => {
    expect(fields({ ...good, name: 'Bad_Name' })).toEqual(['name']);
    expect(fields({ ...good, target: {} })).toEqual(['target.plane']);
    expect(fields({ ...good, source: { plane: 'mgmt' } })).toEqual(['target.plane']);
    expect(fields({ ...good, target: { plane: 'Not An Id' } })).toEqual(['target.plane']);
    expect(fields({ ...good, selector: {} })).toEqual(['selector']);
    expect(fields({ ...good, maxConcurrent: 0 })).toEqual(['maxConcurrent']);
    expect(fields({ ...good, target: { plane: 'mgmt', password: 'x' } })).toContain('target.password');
  });

  it('refuses every field that said where credentials are or where requests go, saying to name a registered plane', () => {
    const r = validatePivotInput({
      ...good,
      source: { api: { url: 'http://127.0.0.1:1', tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token' } },
      target: { kubeconfig: '/root/.kube/config', kubeconfigSecret: { namespace: 'kube-system', name: 'admin' }, taskQueue: 'q', temporalNamespace: 'other' },
    });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors.map((e) => e.field).sort()).toEqual(['source.api', 'target.kubeconfig', 'target.kubeconfigSecret', 'target.taskQueue', 'target.temporalNamespace']);
    expect(r.errors[0]!.reason).toMatch(/name a plane the operator registered \(METALFLOW_PIVOT_PLANES\) by its id/);
  });
});

describe('targetMismatch', () => {
  const expectOf = { provisioningState: 'provisioned', image: 'http://i/a.qcow2', poweredOn: true, consumerRef: { kind: 'Metal3Machine', name: 'm' } };
  const obj = (over: Record<string, unknown> = {}, annotations: Record<string, string> = {}) => ({
    metadata: { name: 'h', annotations },
    spec: { consumerRef: { kind: 'Metal3Machine', name: 'm' } },
    status: { operationalStatus: 'OK' as const, poweredOn: true, provisioning: { state: 'provisioned' as const, ID: 'n', image: { url: 'http://i/a.qcow2' } }, ...over },
  });

  it('agrees only when state, image, power and consumerRef are the source\'s and the host is not paused', () => {
    expect(targetMismatch(obj() as never, expectOf)).toBeUndefined();
    expect(targetMismatch(undefined, expectOf)).toMatch(/does not exist/);
    expect(targetMismatch(obj({}, { 'baremetalhost.metal3.io/paused': 'x' }) as never, expectOf)).toMatch(/paused/);
    expect(targetMismatch(obj({ poweredOn: false }) as never, expectOf)).toMatch(/powered off/);
    expect(targetMismatch(obj({ provisioning: { state: 'available', ID: 'n' } }) as never, expectOf)).toMatch(/available, not provisioned/);
    expect(targetMismatch({ ...obj(), spec: {} } as never, expectOf)).toMatch(/consumerRef/);
  });

  it('takes the power the spec asks when the source was frozen before correcting its own', () => {
    const sourceOff = { ...expectOf, poweredOn: false };
    // Spec online (the default): the target turning it on is the correction the source had not made yet.
    expect(targetMismatch(obj() as never, sourceOff)).toBeUndefined();
    // Spec offline: on is neither the source's power nor the spec's.
    const offline = { ...obj(), spec: { ...obj().spec, online: false } };
    expect(targetMismatch(offline as never, sourceOff)).toMatch(/powered on; the source was off and the spec asks off/);
  });
});
