/**
 * Metal3's HostUpdatePolicy CRD (generated from model/host-update-policy.ts) on a real
 * kube-apiserver: Metal3's manifest applies unchanged, and a mode other than onPreparing or
 * onReboot, or an unknown field, is refused by the API server itself.
 *
 *   METALFLOW_TEST_NO_STACK=1 npx vitest run test/k8s/update-policy-crd.test.ts
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import { KUBE_BUILD_TIMEOUT_MS, kubectl, useKube, type KubeLease } from './kube-harness';

const NS = `hup-${process.pid}-${Date.now().toString(36)}`;
const apply = (doc: Record<string, unknown>, strict = false) =>
  kubectl(['apply', ...(strict ? ['--validate=strict'] : []), '-n', NS, '-f', '-'], { input: JSON.stringify({ apiVersion: 'metal3.io/v1alpha1', kind: 'HostUpdatePolicy', ...doc }), check: false });

let kube: KubeLease | undefined;
beforeAll(() => {
  kube = useKube();
  kubectl(['apply', '-f', join(REPO_ROOT, 'k8s', 'crds')]);
  kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/hostupdatepolicies.metal3.io']);
  kubectl(['create', 'namespace', NS]);
}, KUBE_BUILD_TIMEOUT_MS);

afterAll(() => {
  if (kube) kubectl(['delete', 'hostupdatepolicies', '--all', '-n', NS, '--wait=false'], { check: false });
  kube?.release();
}, 180_000);

describe('HostUpdatePolicy CRD', () => {
  it("applies Metal3's manifest unchanged", () => {
    const ok = apply({ metadata: { name: 'host-0' }, spec: { firmwareSettings: 'onReboot', firmwareUpdates: 'onPreparing' } });
    expect(ok.stderr).toBe('');
    expect(ok.status).toBe(0);
    const got = JSON.parse(kubectl(['get', 'hostupdatepolicy', 'host-0', '-n', NS, '-o', 'json']).stdout) as { spec: unknown };
    expect(got.spec).toEqual({ firmwareSettings: 'onReboot', firmwareUpdates: 'onPreparing' });
  });

  it('refuses a mode it does not know and an unknown field', () => {
    const bad = apply({ metadata: { name: 'bad' }, spec: { firmwareSettings: 'always' } });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/spec\.firmwareSettings: Unsupported value: "always": supported values: "onPreparing", "onReboot"/);
    const unknown = apply({ metadata: { name: 'unknown' }, spec: { raid: 'onReboot' } }, true);
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toMatch(/unknown field "spec\.raid"/);
  });
});
