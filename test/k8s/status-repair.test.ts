/**
 * A status write lost with its worker (the worker's status writer holds writes in memory): the
 * controller compares each BareMetalHost's status with its workflow's search attributes and asks
 * a host that stays behind to write its status again. The lost write is made here by writing an
 * older status over the object, as a write that never arrived would leave it.
 */
import { describe, expect, it } from 'vitest';
import { hostWorkflowId } from '../../model/host-ref';
import { uniq } from '../support/harness';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-repair');
const taskQueue = uniq('tq-repair');
const suite = useShimSuite(NS, taskQueue, { METALFLOW_CONTROLLER_STATUS_SCAN_SECONDS: '2' });
const apply = (doc: Record<string, unknown>) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc) });

describe("the controller's status scan", () => {
  it('has a host whose object shows an older status write it again, once', async () => {
    const name = 'host-repair';
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'x' }));
    apply(hostDoc(name, fakeHostSpec(name)));
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=120s']);

    // What the object would say had the write of `available` been lost with its worker.
    kubectl(['patch', 'bmh', name, '-n', NS, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { provisioning: { state: 'inspecting' } } })]);
    expect(kubectl(['get', 'bmh', name, '-n', NS, '-o', 'jsonpath={.status.provisioning.state}']).stdout).toBe('inspecting');

    const back = kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=60s']);
    expect(back.stdout).toMatch(/condition met/);
    // Let a few more scans pass: the difference is gone, so nothing more is sent.
    const handle = suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name }));
    const signals = async () => ((await handle.fetchHistory()).events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'publishStatus').length;
    expect(await signals()).toBe(1);
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=10s']);
    await new Promise<void>((resolve) => {
      // Three scan periods; the count is what is asserted, not the time.
      setTimeout(resolve, 6_000);
    });
    expect(await signals()).toBe(1);
  });
});
