/**
 * METALFLOW_WATCH_NAMESPACE with several namespaces, on the real
 * kube-apiserver with RBAC: the controller runs in-cluster as the
 * ServiceAccount of k8s/rbac.yaml, with the Secret reader bound only in the
 * two watched namespaces (a RoleBinding each, as rbac.yaml says to add one
 * per host namespace). Hosts in both are driven; a host in a third namespace
 * is not touched (no finalizer, no status, no workflow, no node), and the
 * controller never asks for anything RBAC refuses (it lists per namespace,
 * never cluster-wide).
 */
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import { REPO_ROOT } from '../../config/env';
import { watchPaths } from '../../k8s/controller/informer';
import { bmhPath } from '../../k8s/controller/reconciler';
import { hostWorkflowId, ironicNodeName } from '../../model/host-ref';
import { IRONIC_URL } from '../support/env';
import { uniq, waitFor } from '../support/harness';
import { KUBE_PORTS, KUBE_STATE_DIR, kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { cleanNamespace, useShimSuite } from './shim-harness';

const A = uniq('mf-wa');
const B = uniq('mf-wb');
const C = uniq('mf-wc');
const SA = { namespace: 'metalflow-system', name: 'metalflow-controller' };
const suite = useShimSuite(A, uniq('tq-wns'));
const ironic = new IronicClient({ url: IRONIC_URL });

const apply = (ns: string, doc: Record<string, unknown>) => kubectl(['apply', '-n', ns, '-f', '-'], { input: JSON.stringify(doc) });
const host = (ns: string, name: string) =>
  JSON.parse(kubectl(['get', 'bmh', name, '-n', ns, '-o', 'json']).stdout) as { metadata: { finalizers?: string[] }; status?: { provisioning?: { state?: string; ID?: string } } };

let controllerOutput = (): string => '';

beforeAll(() => {
  // The suite's controller watches A with the admin's kubeconfig: this file's runs in-cluster with rbac.yaml's rights.
  suite.shim.running('controller')?.kill('SIGKILL');
  kubectl(['apply', '-f', join(REPO_ROOT, 'k8s', 'rbac.yaml')]);
  for (const ns of [B, C]) kubectl(['create', 'namespace', ns]);
  for (const ns of [A, B]) {
    kubectl(['create', 'rolebinding', 'metalflow-secret-reader', '-n', ns, '--clusterrole=metalflow-secret-reader', `--serviceaccount=${SA.namespace}:${SA.name}`]);
  }
  for (const [ns, name] of [[A, 'host-a'], [B, 'host-b'], [C, 'host-c']] as const) {
    apply(ns, secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'password' }));
    apply(ns, hostDoc(name, fakeHostSpec(name)));
  }
  // A pod's service-account folder for the local API server.
  const dir = mkdtempSync(join(tmpdir(), 'mf-wns-sa-'));
  copyFileSync(join(KUBE_STATE_DIR, 'pki', 'ca.crt'), join(dir, 'ca.crt'));
  writeFileSync(join(dir, 'token'), kubectl(['create', 'token', SA.name, '-n', SA.namespace, '--duration=1h']).stdout.trim());
  const controller = suite.shim.startController({
    METALFLOW_KUBECONFIG: '',
    KUBERNETES_SERVICE_HOST: '127.0.0.1',
    KUBERNETES_SERVICE_PORT: String(KUBE_PORTS.api),
    METALFLOW_SERVICE_ACCOUNT_DIR: dir,
    METALFLOW_WATCH_NAMESPACE: `${A},${B}`,
    // rbac.yaml lets it write its Lease only in its own namespace.
    METALFLOW_LEASE_NAMESPACE: SA.namespace,
  });
  controllerOutput = () => suite.shim.output(controller);
});
afterAll(() => {
  for (const ns of [B, C]) cleanNamespace(ns);
});

describe('METALFLOW_WATCH_NAMESPACE', { timeout: 300_000 }, () => {
  it('names the cluster-wide path when unset, one path per namespace otherwise', () => {
    expect(watchPaths(undefined, bmhPath)).toEqual(['/apis/metal3.io/v1alpha1/baremetalhosts']);
    expect(watchPaths(['x', 'y'], bmhPath)).toEqual(['/apis/metal3.io/v1alpha1/namespaces/x/baremetalhosts', '/apis/metal3.io/v1alpha1/namespaces/y/baremetalhosts']);
  });

  it('drives the hosts of both watched namespaces, leaves the unwatched one alone, and needs no cluster-wide Secret read', async () => {
    for (const [ns, name] of [[A, 'host-a'], [B, 'host-b']] as const) {
      await waitFor(`${ns}/${name} available`, async () => host(ns, name).status?.provisioning?.state === 'available' || undefined, { timeoutMs: 240_000 });
      const id = host(ns, name).status!.provisioning!.ID!;
      expect((await ironic.getNode(id))?.extra).toMatchObject({ metalflow_host: `${ns}/${name}` });
    }
    // The controller listed C's host with the others' (it existed before the controller started), if it listed it at all.
    const c = host(C, 'host-c');
    expect(c.metadata.finalizers ?? []).toEqual([]);
    expect(c.status ?? {}).toEqual({});
    await expect(suite.client.workflow.getHandle(hostWorkflowId({ namespace: C, name: 'host-c' })).describe()).rejects.toThrow(/not found/i);
    expect(await ironic.getNode(ironicNodeName({ namespace: C, name: 'host-c' }))).toBeUndefined();
    expect(controllerOutput()).not.toMatch(/forbidden/i);
    expect(controllerOutput()).toMatch(/watching 2 BareMetalHosts/);
  });

  it("ships the binding that every namespace needs: without it the ServiceAccount reads no Secret outside the bound namespaces", () => {
    const canList = (who: string, ns: string[]) => kubectl(['auth', 'can-i', 'list', 'secrets', ...ns, `--as=${who}`], { check: false }).stdout.trim();
    const controller = `system:serviceaccount:${SA.namespace}:${SA.name}`;
    expect(canList(controller, ['-n', A])).toBe('yes');
    expect(canList(controller, ['-n', C])).toBe('no');
    expect(canList(controller, ['--all-namespaces'])).toBe('no');
    // rbac-all-namespaces.yaml's binding, given to a ServiceAccount of this file: test/k8s/crd.test.ts checks at the
    // same time that the shipped ServiceAccount has no cluster-wide Secret read.
    const binding = JSON.parse(kubectl(['create', '--dry-run=client', '-o', 'json', '-f', join(REPO_ROOT, 'k8s', 'rbac-all-namespaces.yaml')]).stdout) as {
      metadata: { name: string };
      roleRef: { name: string };
      subjects: { kind: string; name: string; namespace: string }[];
    };
    expect(binding.roleRef.name).toBe('metalflow-secret-reader');
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: SA.name, namespace: SA.namespace }]);
    kubectl(['create', 'serviceaccount', 'all-namespaces', '-n', A]);
    const other = `system:serviceaccount:${A}:all-namespaces`;
    expect(canList(other, ['--all-namespaces'])).toBe('no');
    const name = `${A}-all-namespaces`;
    kubectl(['create', '-f', '-'], { input: JSON.stringify({ ...binding, metadata: { ...binding.metadata, name }, subjects: [{ kind: 'ServiceAccount', name: 'all-namespaces', namespace: A }] }) });
    try {
      expect(canList(other, ['--all-namespaces'])).toBe('yes');
    } finally {
      kubectl(['delete', 'clusterrolebinding', name]);
    }
  });
});
