/**
 * Kubernetes mode: a BareMetalHost whose workflow ended abnormally (here:
 * terminated) is re-adopted by the controller, its provisioned node left as
 * it is, and a delete of such a host deprovisions it through a workflow
 * instead of dropping the finalizer and orphaning the node.
 */
import { describe, expect, it } from 'vitest';
import { operationRuns } from '../support/operation-history';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery } from '../../contracts/host';
import { IRONIC_URL } from '../support/env';
import { uniq, waitFor } from '../support/harness';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-readopt');
// The controller looks for ended host workflows every second here (30 s by default).
const suite = useShimSuite(NS, uniq('tq-readopt'), { METALFLOW_CONTROLLER_ENDED_SCAN_SECONDS: '1' });

const apply = (doc: Record<string, unknown>) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc) });
const image = { url: 'http://127.0.0.1/images/readopt.qcow2', checksum: 'c'.repeat(64), checksumType: 'sha256', format: 'qcow2' };

/** Ironic's own record of the node's last provision-state change: a deploy, an adopt or an inspection moves it. */
async function ironicNode(id: string): Promise<{ provision_state: string; provision_updated_at: string | null } | undefined> {
  // The shared Ironic, busy with the other files, may drop a connection (a run saw "fetch failed"): read again.
  const read = await waitFor(`Ironic's answer for node ${id}`, async () => {
    const res = await fetch(`${IRONIC_URL}/v1/nodes/${id}`, { headers: { 'X-OpenStack-Ironic-API-Version': '1.81' } });
    if (res.status === 404) return { node: undefined };
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    return { node: (await res.json()) as { provision_state: string; provision_updated_at: string | null } };
  });
  return read.node;
}

/** Operations of a kind the host ran, as children or inside its workflow (test/support/operation-history.ts). */
const operationsOf = (name: string, kind: string): Promise<number> => operationRuns(suite.client, { namespace: NS, name }, kind);

async function provisionedThenTerminated(name: string): Promise<string> {
  apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'pw' }));
  apply(hostDoc(name, { ...fakeHostSpec(name), image }));
  kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=provisioned', `bmh/${name}`, '--timeout=120s']);
  const nodeId = kubectl(['get', 'bmh', name, '-n', NS, '-o', 'jsonpath={.status.provisioning.ID}']).stdout;
  const handle = suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name }));
  await handle.terminate('test: the host workflow ends abnormally');
  expect((await handle.describe()).status.name).toBe('TERMINATED');
  return nodeId;
}

const events = (name: string): { reason: string; type: string; message: string }[] =>
  JSON.parse(kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']).stdout).items;

describe('a BareMetalHost whose workflow ended abnormally', () => {
  it('is re-adopted by the controller and stays provisioned, with no new deploy or inspection', async () => {
    const name = 'host-readopt';
    const nodeId = await provisionedThenTerminated(name);
    const before = await ironicNode(nodeId);
    expect(before?.provision_state).toBe('active');

    const handle = suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name }));
    const view = await waitFor(
      'the host re-adopted by a new run',
      async () => {
        if ((await handle.describe()).status.name !== 'RUNNING') return undefined;
        const v = await handle.query(hostViewQuery);
        const enrolled = v.operations.some((o) => o.kind === 'enroll' && o.outcome === 'succeeded');
        return enrolled && !v.currentOperation ? v : undefined;
      },
      { timeoutMs: 90_000 },
    );
    expect(view.status.provisioning).toMatchObject({ state: 'provisioned', ID: nodeId });
    expect(view.operations.map((o) => o.kind)).toEqual(['enroll']);
    const readopted = events(name).filter((e) => e.reason === 'WorkflowReadopted');
    expect(readopted).toHaveLength(1);
    expect(readopted[0]).toMatchObject({ type: 'Warning' });
    expect(readopted[0]!.message).toMatch(/ended abnormally \(TERMINATED/);

    // The node was left as it was: no provision-state change at all since the terminate.
    expect(await ironicNode(nodeId)).toMatchObject({ provision_state: 'active', provision_updated_at: before?.provision_updated_at });
    expect(await operationsOf(name, 'provision')).toBe(1);
    expect(await operationsOf(name, 'inspect')).toBe(1);
    expect(kubectl(['get', 'bmh', name, '-n', NS, '-o', 'jsonpath={.status.provisioning.state}']).stdout).toBe('provisioned');
  });

  it('is deleted properly: re-adopted, deprovisioned through a workflow, its node removed', async () => {
    const name = 'host-readopt-del';
    const nodeId = await provisionedThenTerminated(name);
    kubectl(['delete', 'bmh', name, '-n', NS, '--timeout=120s']);
    expect(kubectl(['get', 'bmh', name, '-n', NS], { check: false }).status).not.toBe(0);
    expect(await ironicNode(nodeId)).toBeUndefined();
    expect(await operationsOf(name, 'deprovision')).toBe(1);
    expect((await suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).describe()).status.name).toBe('COMPLETED');
  });

  it('is re-adopted from its status when its workflow is gone from Temporal altogether', async () => {
    const name = 'host-readopt-gone';
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'pw' }));
    apply(hostDoc(name, { ...fakeHostSpec(name), image }));
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=provisioned', `bmh/${name}`, '--timeout=120s']);
    const nodeId = kubectl(['get', 'bmh', name, '-n', NS, '-o', 'jsonpath={.status.provisioning.ID}']).stdout;
    const before = await ironicNode(nodeId);
    const workflowId = hostWorkflowId({ namespace: NS, name });
    // As after a new Temporal, or past retention: no run by that id at all (deleting a running one terminates it first).
    await suite.client.workflowService.deleteWorkflowExecution({ namespace: 'default', workflowExecution: { workflowId } });
    const handle = suite.client.workflow.getHandle(workflowId);
    await waitFor('no run left', async () => (await handle.describe().then(() => false, () => true)) || undefined, { timeoutMs: 30_000 });
    // Nothing about the object changed: any event brings it to the controller (as its first list after a restart does).
    kubectl(['annotate', 'bmh', name, '-n', NS, 'test/touched=1']);

    const view = await waitFor(
      'the host re-adopted by a new run',
      async () => {
        if ((await handle.describe()).status.name !== 'RUNNING') return undefined;
        const v = await handle.query(hostViewQuery);
        return v.operations.some((o) => o.kind === 'enroll' && o.outcome === 'succeeded') && !v.currentOperation ? v : undefined;
      },
      { timeoutMs: 90_000 },
    );
    expect(view.status.provisioning).toMatchObject({ state: 'provisioned', ID: nodeId });
    expect(view.operations.map((o) => o.kind)).toEqual(['enroll']);
    expect(events(name).filter((e) => e.reason === 'WorkflowReadopted').map((e) => e.message)).toEqual([
      expect.stringMatching(/gone from Temporal .*re-adopted from the object's status \(provisioning state provisioned/),
    ]);
    expect(await ironicNode(nodeId)).toMatchObject({ provision_state: 'active', provision_updated_at: before?.provision_updated_at });
  });

  it("releases the finalizers Metal3's operator put on its Secret and HardwareData when it is deleted", async () => {
    const name = 'host-from-bmo';
    const secret = `${name}-bmc-secret`;
    // As BMO leaves them: its finalizer on the credentials Secret and on the HardwareData.
    apply({ ...secretDoc(secret, { username: 'admin', password: 'pw' }), metadata: { name: secret, finalizers: ['baremetalhost.metal3.io/secret'] } });
    apply(hostDoc(name, fakeHostSpec(name)));
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=120s']);
    const hw = kubectl(['get', 'hardwaredata', name, '-n', NS], { check: false });
    if (hw.status === 0) {
      kubectl(['patch', 'hardwaredata', name, '-n', NS, '--type=merge', '-p', JSON.stringify({ metadata: { finalizers: ['baremetalhost.metal3.io/hardwareData'] } })]);
    } else {
      apply({ apiVersion: 'metal3.io/v1alpha1', kind: 'HardwareData', metadata: { name, finalizers: ['baremetalhost.metal3.io/hardwareData'] }, spec: {} });
    }

    kubectl(['delete', 'bmh', name, '-n', NS, '--timeout=120s']);
    // Without the release the HardwareData would stay Terminating and the Secret could never be deleted.
    await waitFor('the HardwareData gone', async () => kubectl(['get', 'hardwaredata', name, '-n', NS], { check: false }).status !== 0, { timeoutMs: 30_000 });
    expect(kubectl(['get', 'secret', secret, '-n', NS, '-o', 'jsonpath={.metadata.finalizers}']).stdout).toBe('');
    kubectl(['delete', 'secret', secret, '-n', NS, '--timeout=30s']);
  });
});

