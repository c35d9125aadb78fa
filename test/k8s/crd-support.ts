/**
 * What the CRD tests (crd.test.ts, crd-validation.test.ts) share: the
 * Metal3 fixtures, small BareMetalHost manifests, and a namespace of each
 * file's own on the shared kube-apiserver with the CRDs, admission policy and
 * RBAC applied (so the files run in any order, or alone).
 */
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import { KUBE_BUILD_TIMEOUT_MS, kubectl, useKube, type KubeLease, type RunResult } from './kube-harness';

const FIXTURES = join(REPO_ROOT, 'test', 'k8s', 'fixtures');
export const fixture = (name: string): string => join(FIXTURES, name);

export const bmh = (name: string, spec: Record<string, unknown>): string =>
  JSON.stringify({ apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', metadata: { name }, spec });
export const baseSpec = (mac = '00:5c:52:31:3a:01'): Record<string, unknown> => ({
  online: true,
  bootMACAddress: mac,
  bmc: { address: 'ipmi://192.168.122.1:6233', credentialsName: 'host-0-bmc-secret' },
});

export interface CrdNamespaces {
  /** The file's namespace; hosts go here. */
  ns: string;
  /** A second namespace, for cross-namespace references. */
  other: string;
  /** `kubectl apply` of an inline manifest in `ns`. */
  apply: (manifest: string, ...extra: string[]) => RunResult;
}

/** Registers the file's beforeAll/afterAll: call at the top level of a test file. */
export function useCrdNamespaces(prefix: string): CrdNamespaces {
  const ns = `${prefix}-${process.pid}-${Date.now().toString(36)}`;
  const other = `${ns}-other`;
  let kube: KubeLease | undefined;

  beforeAll(() => {
    kube = useKube();
    kubectl(['apply', '-f', join(REPO_ROOT, 'k8s', 'crds'), '-f', join(REPO_ROOT, 'k8s', 'rbac.yaml')]);
    kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/baremetalhosts.metal3.io', 'crd/hardwaredata.metal3.io']);
    kubectl(['create', 'namespace', ns]);
    kubectl(['create', 'namespace', other]);
  }, KUBE_BUILD_TIMEOUT_MS);

  afterAll(() => {
    // Without a controller-manager a deleted namespace never finishes
    // terminating; delete the hosts (no finalizers here) and leave the namespaces.
    if (kube) kubectl(['delete', 'bmh,hardwaredata,secrets', '--all', '-n', ns, '--wait=false'], { check: false });
    kube?.release();
  }, 180_000);

  return { ns, other, apply: (manifest, ...extra) => kubectl(['apply', '-n', ns, ...extra, '-f', '-'], { input: manifest, check: false }) };
}
