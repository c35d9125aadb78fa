/**
 * The shim across an API server restart and an outage. These stop the shared
 * test API server, so they run in vitest's "alone" group (vitest.config.ts):
 * beside other Kubernetes files, the outage failed those files' own calls
 * (CI saw a remediation's Node read refused while this ran).
 */
import { describe, expect, it } from 'vitest';
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery } from '../../workflows/definitions';
import { uniq, waitFor } from '../support/harness';
import { kubeSh, kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-outage');
const taskQueue = uniq('tq-k8s-outage');
const suite = useShimSuite(NS, taskQueue);

const json = (args: string[]) => JSON.parse(kubectl([...args, '-n', NS, '-o', 'json']).stdout);
const apply = (doc: Record<string, unknown>, check = true) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc), check });

describe('the Kubernetes shim and its API server', () => {
  it('catches up after the API server restarts while hosts are provisioning', async () => {
    const name = 'host-restart';
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'x' }));
    apply(hostDoc(name, { ...fakeHostSpec(name), image: { url: 'http://127.0.0.1/images/r.qcow2', checksum: 'c'.repeat(64), checksumType: 'sha256', format: 'qcow2' } }));
    await waitFor('registration under way', async () => (json(['get', 'bmh', name]).status?.provisioning?.state ?? '') !== '', { timeoutMs: 60_000 });
    kubeSh('restart', 'apiserver');
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=provisioned', `bmh/${name}`, '--timeout=180s']);
    // The watch came back: a change after the restart is still acted on.
    kubectl(['patch', 'bmh', name, '-n', NS, '--type=json', '-p', '[{"op":"remove","path":"/spec/image"}]']);
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=120s']);
  });

  it('keeps working while the API server is down: the host provisions, and its status catches up when the server returns', async () => {
    const name = 'host-outage';
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'x' }));
    apply(hostDoc(name, fakeHostSpec(name)));
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=120s']);
    const handle = suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name }));
    kubectl(['patch', 'bmh', name, '-n', NS, '--type=merge', '-p', JSON.stringify({
      spec: { image: { url: 'http://127.0.0.1/images/outage.qcow2', checksum: 'd'.repeat(64), checksumType: 'sha256', format: 'qcow2' } },
    })]);
    await waitFor('the workflow has the image', async () => (await handle.query(hostViewQuery)).spec?.image !== undefined);
    kubeSh('stop', 'apiserver');
    try {
      // Each status write now waits for the API server; the deploy must not.
      await waitFor('provisioned with the API server down', async () => (await handle.query(hostViewQuery)).status.provisioning.state === 'provisioned');
    } finally {
      kubeSh('start', 'apiserver');
    }
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=provisioned', `bmh/${name}`, '--timeout=150s']);
  });

});
