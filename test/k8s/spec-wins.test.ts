/**
 * The spec wins in Kubernetes mode, as with Metal3's level-triggered operator:
 * a change applied to the BareMetalHost gets a host out of a step that keeps
 * failing, on the real kube-apiserver, the controller and a worker in
 * Kubernetes mode, the test stack's Temporal and Ironic (fake-hardware).
 * - A host whose provisioning fails in automated cleaning (its node switched
 *   to the `direct` deploy cleans with an agent that never comes; the test
 *   aborts that clean) provisions once `automatedCleaningMode: disabled` is
 *   applied: the next attempt finds `automated_clean` false on the node.
 * - A host held in inspection (its node given the `agent` inspect interface,
 *   which fake-hardware cannot run, then re-inspection asked) goes on to
 *   `available` once `inspectionMode: disabled` is applied.
 * Both hosts are applied before the tests, so they register side by side.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import { IRONIC_URL } from '../support/env';
import { uniq, waitFor } from '../support/harness';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-spec-wins');
const suite = useShimSuite(NS, uniq('tq-spec-wins'));
const ironic = new IronicClient({ url: IRONIC_URL });
const IMAGE = { url: 'http://127.0.0.1/images/spec-wins.qcow2', checksum: 'e'.repeat(64), checksumType: 'sha256', format: 'qcow2' };

interface Status {
  provisioning: { state: string; ID: string };
  operationalStatus: string;
  errorType: string;
  errorMessage: string;
  errorCount: number;
}
const status = (name: string): Status => JSON.parse(kubectl(['get', 'bmh', name, '-n', NS, '-o', 'json']).stdout).status as Status;
const apply = (doc: Record<string, unknown>) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc) });
const patchSpec = (name: string, spec: Record<string, unknown>) =>
  kubectl(['patch', 'bmh', name, '-n', NS, '--type=merge', '-p', JSON.stringify({ spec })]);
const waitState = (name: string, state: string) =>
  kubectl(['wait', '-n', NS, `--for=jsonpath={.status.provisioning.state}=${state}`, `bmh/${name}`, '--timeout=120s']);
const view = (name: string): Promise<HostView> => suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery);

const CLEAN_HOST = 'clean-fails';
const INSPECT_HOST = 'inspection-held';
beforeAll(() => {
  for (const name of [CLEAN_HOST, INSPECT_HOST]) apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'pw' }));
  apply(hostDoc(CLEAN_HOST, fakeHostSpec(CLEAN_HOST)));
  // Made available without inspection: its inspection is asked for later, once it cannot succeed.
  apply(hostDoc(INSPECT_HOST, fakeHostSpec(INSPECT_HOST, { online: false }), { 'inspect.metal3.io': 'disabled' }));
});

describe('the spec wins over a failing step (Kubernetes mode)', () => {
  it('a BareMetalHost whose provisioning fails in automated cleaning provisions once automatedCleaningMode: disabled is applied', { timeout: 300_000 }, async () => {
    waitState(CLEAN_HOST, 'available');
    const nodeId = status(CLEAN_HOST).provisioning.ID;
    await ironic.patchNode(nodeId, [{ op: 'replace', path: '/deploy_interface', value: 'direct' }]);
    patchSpec(CLEAN_HOST, { image: IMAGE });
    await waitFor('the node cleaning, waiting for its agent', async () => (await ironic.getNode(nodeId))?.provision_state === 'clean wait', { timeoutMs: 120_000 });
    await ironic.abortProvisioning(nodeId);
    const failed = await waitFor('the provisioning error on the object', async () => {
      const st = status(CLEAN_HOST);
      return st.errorType === 'provisioning error' ? st : undefined;
    }, { timeoutMs: 120_000 });
    // Ironic's own reason (the aborted clean), not a bare "failed".
    expect(failed.errorMessage).toMatch(/clean/i);
    expect(failed.errorMessage).not.toMatch(/no reason given/);
    expect((await ironic.getNode(nodeId))?.automated_clean).toBe(true);

    // What the host's error message recommends, applied as a Metal3 user applies it.
    patchSpec(CLEAN_HOST, { automatedCleaningMode: 'disabled' });
    // A deprovisioning that began before the change reached the workflow may clean once more (a running step is
    // not interrupted): aborted too. None after it: the next attempt finds automated_clean false on the node.
    let cleansAfterChange = 0;
    const recovered = await waitFor('the host provisioned', async () => {
      const node = await ironic.getNode(nodeId);
      if (node?.provision_state === 'clean wait') {
        cleansAfterChange += 1;
        if (cleansAfterChange > 1) throw new Error('the node cleaned again after automatedCleaningMode: disabled was applied');
        await ironic.abortProvisioning(nodeId);
        return undefined;
      }
      const st = status(CLEAN_HOST);
      return st.provisioning.state === 'provisioned' && st.operationalStatus === 'OK' ? { st, node } : undefined;
    }, { timeoutMs: 180_000, intervalMs: 250 });
    expect(recovered.node).toMatchObject({ provision_state: 'active', automated_clean: false });
    expect(recovered.st).toMatchObject({ errorType: '', errorCount: 0 });
    expect((await view(CLEAN_HOST)).operations.map((o) => `${o.kind}:${o.outcome}`)).toContain('deprovision:succeeded');
  });

  it('a BareMetalHost held in inspection goes on to available once inspectionMode: disabled is applied', { timeout: 300_000 }, async () => {
    waitState(INSPECT_HOST, 'available');
    const nodeId = status(INSPECT_HOST).provisioning.ID;
    // An inspect interface fake-hardware cannot run: every inspection of this node fails, and the host retries it.
    await ironic.patchNode(nodeId, [{ op: 'add', path: '/inspect_interface', value: 'agent' }]);
    kubectl(['annotate', 'bmh', INSPECT_HOST, '-n', NS, '--overwrite', 'inspect.metal3.io=']);
    await waitFor('inspection failing, retried', async () => {
      const st = status(INSPECT_HOST);
      return st.provisioning.state === 'inspecting' && st.errorType === 'inspection error' ? st : undefined;
    }, { timeoutMs: 120_000 });

    const changedAt = Date.now();
    patchSpec(INSPECT_HOST, { inspectionMode: 'disabled' });
    await waitFor('available, no error', async () => {
      const st = status(INSPECT_HOST);
      return st.provisioning.state === 'available' && st.operationalStatus === 'OK' ? st : undefined;
    }, { timeoutMs: 120_000 });
    const done = status(INSPECT_HOST);
    expect(done).toMatchObject({ errorType: '', errorCount: 0 });
    // An attempt under way when the spec changed is cancelled; none starts or fails after it.
    const later = (await view(INSPECT_HOST)).operations.filter((o) => Date.parse(o.endedAt ?? o.startedAt) > changedAt);
    expect(later.filter((o) => o.kind === 'inspect' && o.outcome !== 'cancelled')).toEqual([]);
    expect(later.filter((o) => o.outcome === 'failed')).toEqual([]);
    expect(later.map((o) => o.kind)).toContain('prepare');
  });
});
