/** A pivot's input check (types/pivot.ts) and the verify step's comparison (activities/pivot-activities.ts). */
import { describe, expect, it } from 'vitest';
import { validatePivotInput } from '../../types/pivot';
import { targetMismatch } from '../../activities/pivot-activities';

const good = { name: 'to-mgmt', source: {}, target: { kubeconfig: '/etc/metalflow/target.kubeconfig', taskQueue: 'metalflow-hosts' }, selector: { namespace: 'metal3' } };

describe('validatePivotInput', () => {
  it('accepts a pivot to a target kubeconfig', () => {
    expect(validatePivotInput(good)).toMatchObject({ ok: true });
  });

  it('names each bad field', () => {
    const fields = (input: unknown) => {
      const r = validatePivotInput(input);
      return r.ok ? [] : r.errors.map((e) => e.field);
    };
    expect(fields({ ...good, name: 'Bad_Name' })).toEqual(['name']);
    expect(fields({ ...good, target: {} })).toEqual(['target.kubeconfig']);
    expect(fields({ ...good, target: { kubeconfig: '/a', kubeconfigSecret: { namespace: 'ns', name: 'k' } } })).toEqual(['target.kubeconfigSecret']);
    expect(fields({ ...good, selector: {} })).toEqual(['selector']);
    expect(fields({ ...good, maxConcurrent: 0 })).toEqual(['maxConcurrent']);
    expect(fields({ ...good, target: { kubeconfig: '/a', password: 'x' } })).toContain('target.password');
  });

  it('takes API planes, each naming where its token is, never the token', () => {
    const api = (url: string, more: Record<string, unknown> = { tokenFile: '/etc/metalflow/token' }) => ({ api: { url, ...more } });
    const apiGood = { ...good, source: api('http://127.0.0.1:8080'), target: api('https://mgmt.example:8080', { tokenSecret: { namespace: 'metal3', name: 'mgmt-token' } }) };
    expect(validatePivotInput(apiGood)).toMatchObject({ ok: true });
    const fields = (input: unknown) => {
      const r = validatePivotInput(input);
      return r.ok ? [] : r.errors.map((e) => e.field);
    };
    expect(fields({ ...apiGood, target: api('https://mgmt.example:8080', { token: 'secret' }) })).toContain('target.api.token');
    expect(fields({ ...apiGood, target: api('https://mgmt.example:8080', {}) })).toEqual(['target.api.tokenFile']);
    expect(fields({ ...apiGood, target: api('https://mgmt.example:8080', { tokenFile: '/t', tokenSecret: { namespace: 'a', name: 'b' } }) })).toEqual(['target.api.tokenFile']);
    expect(fields({ ...apiGood, target: api('ftp://x') })).toEqual(['target.api.url']);
    expect(fields({ ...apiGood, target: api('http://127.0.0.1:8080/') })).toEqual(['target.api.url']);
    expect(fields({ ...apiGood, target: { ...api('https://m:1'), kubeconfig: '/k' } })).toEqual(['target.api']);
    expect(fields({ ...good, target: api('https://m:1') })).toEqual(['target.api']);
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
