/**
 * METALFLOW_REMEDIATION_CAPM3=true on a real API server: a Metal3Remediation
 * (CAPM3's, CRD stand-ins in fixtures/capm3-remediation-crds.yaml) names a
 * Machine, whose Metal3Machine holds a BareMetalHost; the controller creates
 * a HostRemediation for it, the remediation runs, and its phase and counts
 * are written back to the Metal3Remediation. The test plays the kubelet.
 */
import { describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { REPO_ROOT } from '../../config/env';
import { uniq, waitFor } from '../support/harness';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';
import { kubeletRuns, setReady } from './play-kubelet';

const NS = uniq('mf-capm3');
const suite = useShimSuite(NS, uniq('tq-capm3'), { METALFLOW_REMEDIATION_CAPM3: 'true' });
const LONG = 240_000;
const HOST = uniq('host');

const apply = (doc: Record<string, unknown>) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc) });
const get = <T>(kind: string, name: string): T | undefined => {
  const r = kubectl(['get', kind, name, '-n', NS, '-o', 'json'], { check: false });
  return r.status === 0 ? (JSON.parse(r.stdout) as T) : undefined;
};
interface Obj {
  metadata: { uid: string; ownerReferences?: { kind: string; name: string }[] };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

describe('Metal3Remediation objects (METALFLOW_REMEDIATION_CAPM3=true)', () => {
  it('a Metal3Remediation gets one HostRemediation for its Machine\'s host; CAPM3\'s status follows; deleting it deletes the HostRemediation', async () => {
    kubectl(['apply', '-f', join(REPO_ROOT, 'test', 'k8s', 'fixtures', 'capm3-remediation-crds.yaml')]);
    kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/metal3remediations.infrastructure.cluster.x-k8s.io', 'crd/machines.cluster.x-k8s.io', 'crd/metal3machines.infrastructure.cluster.x-k8s.io']);
    apply(secretDoc(`${HOST}-bmc-secret`, { username: 'admin', password: 'x' }));
    apply(hostDoc(HOST, fakeHostSpec(HOST)));
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${HOST}`, '--timeout=300s']);
    const uid = get<Obj>('bmh', HOST)!.metadata.uid;
    const m = { node: `${HOST}-node`, systemUUID: randomUUID() };
    kubectl(['create', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: m.node, labels: { 'metal3.io/uuid': uid } }, spec: { providerID: `metal3://${uid}` } }) });
    setReady(m.node, m.systemUUID, 'True');

    // What Cluster API and CAPM3 leave: the Machine (its Node in status), its Metal3Machine holding the host, and MHC's Metal3Remediation (the Machine's name).
    apply({ apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'Machine', metadata: { name: 'worker-0' }, spec: { infrastructureRef: { apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta1', kind: 'Metal3Machine', name: 'worker-0-m3m' } } });
    kubectl(['patch', 'machine.cluster.x-k8s.io', 'worker-0', '-n', NS, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { nodeRef: { kind: 'Node', name: m.node } } })]);
    apply({ apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta1', kind: 'Metal3Machine', metadata: { name: 'worker-0-m3m', annotations: { 'metal3.io/BareMetalHost': `${NS}/${HOST}` } }, spec: {} });
    apply({ apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta1', kind: 'Metal3Remediation', metadata: { name: 'worker-0' }, spec: { strategy: { type: 'Reboot', retryLimit: 1, timeout: '5m' } } });
    const m3r = get<Obj>('metal3remediation', 'worker-0')!;

    await waitFor('the HostRemediation', async () => get('hostremediation', 'capm3-worker-0') !== undefined, { timeoutMs: LONG, intervalMs: 500 });
    const hr = get<Obj>('hostremediation', 'capm3-worker-0')!;
    expect(hr.spec).toMatchObject({ hostName: HOST, nodeName: m.node, strategy: { type: 'Reboot', retryLimit: 1, timeoutSeconds: 300 } });
    expect(hr.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Metal3Remediation', name: 'worker-0', uid: m3r.metadata.uid })]);

    await kubeletRuns(m, waitFor('succeeded', async () => get<Obj>('hostremediation', 'capm3-worker-0')?.status?.outcome === 'succeeded', { timeoutMs: LONG, intervalMs: 500 }));
    await waitFor('CAPM3\'s status', async () => get<Obj>('metal3remediation', 'worker-0')?.status?.retryCount === 1, { timeoutMs: LONG, intervalMs: 500 });
    expect(get<Obj>('metal3remediation', 'worker-0')!.status).toMatchObject({ phase: 'Waiting', retryCount: 1, lastRemediated: expect.any(String) });
    // The host was power-cycled through CAPM3's kind of key, and released.
    expect(Object.keys(get<{ metadata: { annotations?: Record<string, string> } }>('bmh', HOST)!.metadata.annotations ?? {}).filter((k) => k.startsWith('reboot.metal3.io/'))).toEqual([]);

    kubectl(['delete', 'metal3remediation', 'worker-0', '-n', NS]);
    await waitFor('the HostRemediation deleted', async () => get('hostremediation', 'capm3-worker-0') === undefined, { timeoutMs: LONG, intervalMs: 500 });
    expect(suite.shim.output(suite.shim.running('controller')!)).toMatch(/Metal3Remediation taken: HostRemediation capm3-worker-0/);
  }, LONG * 3);
});
