/**
 * The shim across an API server restart and an outage, on an API server and
 * etcd of this file's own: stopping the shared test API server failed the
 * other Kubernetes files' calls (CI saw a remediation's Node read refused).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeConfig } from '@kubernetes/client-node';
import type { WorkflowHandle } from '@temporalio/client';
import { loadKubeConfig } from '../../clients/kubernetes/kube-config';
import { KubeRest } from '../../clients/kubernetes/kube-rest';
import type { HostRef } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery } from '../../contracts/host';
import { ApiError } from '../../api/api-error';
import type { hostWorkflow } from '../../workflows/host/host';
import { FAST_HOST_OPTIONS, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { REPO_ROOT } from '../../config/env';
import { unusedPort } from '../support/ports';
import { KUBE_BUILD_TIMEOUT_MS, kubectl as sharedKubectl, startOwnKube, type OwnKube } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-outage');
const taskQueue = uniq('tq-k8s-outage');

let own: OwnKube | undefined;
// Registered before the shim suite's hooks: its worker and controller talk to this API server.
beforeAll(async () => {
  own = startOwnKube(join(REPO_ROOT, '.state', 'test-kube-outage'), { etcd: await unusedPort(), etcdPeer: await unusedPort(), api: await unusedPort() });
}, KUBE_BUILD_TIMEOUT_MS);
afterAll(() => own?.stop());
const ownKube = (): OwnKube => {
  if (!own) throw new Error('the API server of this file is not started');
  return own;
};
const kubectl = (args: string[], opts: { input?: string; check?: boolean } = {}) => sharedKubectl(args, { ...opts, kubeconfig: ownKube().kubeconfig });
const kubeSh = (...args: string[]): Promise<void> => ownKube().sh(...args);
const suite = useShimSuite(NS, taskQueue, {}, () => ({}), () => ownKube().kubeconfig);

const json = (args: string[]) => JSON.parse(kubectl([...args, '-n', NS, '-o', 'json']).stdout);
const apply = (doc: Record<string, unknown>, check = true) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc), check });

describe('the Kubernetes shim and its API server', () => {
  it('catches up after the API server restarts while hosts are provisioning', async () => {
    const name = 'host-restart';
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'x' }));
    apply(hostDoc(name, { ...fakeHostSpec(name), image: { url: 'http://127.0.0.1/images/r.qcow2', checksum: 'c'.repeat(64), checksumType: 'sha256', format: 'qcow2' } }));
    await waitFor('registration under way', async () => (json(['get', 'bmh', name]).status?.provisioning?.state ?? '') !== '', { timeoutMs: 60_000 });
    await kubeSh('restart', 'apiserver');
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
    await kubeSh('stop', 'apiserver');
    try {
      // Each status write now waits for the API server; the deploy must not.
      await waitFor('provisioned with the API server down', async () => (await handle.query(hostViewQuery)).status.provisioning.state === 'provisioned');
    } finally {
      await kubeSh('start', 'apiserver');
    }
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=provisioned', `bmh/${name}`, '--timeout=150s']);
  });

});

/**
 * A host whose status write cannot finish must still hand over to a fresh run and act. Before
 * patch bounded-history the hand-over waited for the write, which was retried for as long as the
 * API server was away: the host took no delete, power change or spec until it came back.
 * Driven through the HTTP API's service (no controller: the API server is down), with a
 * worker in Kubernetes mode and a history limit that hands over after every few steps.
 */
/** `call`, sent again while the API answers 503 (Temporal busy: nothing changed), for up to a minute. */
async function retryUnavailable<T>(call: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 503) || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, (err.retryAfterSeconds ?? 1) * 1000));
    }
  }
}

describe('a status write that cannot finish', () => {
  const ns = uniq('mf-outbox');
  let h: Harness | undefined;
  beforeAll(async () => {
    kubectl(['create', 'namespace', ns]);
    const kc = new KubeConfig();
    loadKubeConfig(kc, ownKube().kubeconfig);
    h = await startHarness({ kubernetes: await KubeRest.create(kc), hostOptions: { ...FAST_HOST_OPTIONS, publishStatus: true, maxHistoryEvents: 20 } });
  });
  afterAll(async () => {
    await h?.close();
    kubectl(['delete', 'namespace', ns, '--wait=false'], { check: false });
  });

  const bmhStatus = (name: string) => JSON.parse(kubectl(['get', 'bmh', name, '-n', ns, '-o', 'json']).stdout).status as { provisioning?: { state?: string }; poweredOn?: boolean } | undefined;
  /** Runs of the host's workflow other than `since` (the run before the outage). */
  const runsSince = async (handle: WorkflowHandle<typeof hostWorkflow>, since: string): Promise<number> => {
    let runs = 0;
    if (!h) return runs;
    for await (const wf of h.client.workflow.list({ query: `WorkflowId = '${handle.workflowId}'` })) if (wf.runId !== since) runs++;
    return runs;
  };

  it('hands over with the write unfinished: the host obeys a delete and a power change, and its status catches up', async () => {
    if (!h) throw new Error('no harness');
    const harness = h;
    const refs: Record<'kept' | 'deleted', HostRef> = { kept: { namespace: ns, name: uniq('kept') }, deleted: { namespace: ns, name: uniq('deleted') } };
    const handles = {
      kept: harness.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(refs.kept)),
      deleted: harness.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(refs.deleted)),
    };
    for (const ref of Object.values(refs)) {
      const spec = fakeHostSpec(ref.name);
      kubectl(['apply', '-n', ns, '-f', '-'], { input: JSON.stringify(hostDoc(ref.name, spec)) });
      await harness.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'x' } });
    }
    for (const ref of Object.values(refs)) {
      await waitFor(`${ref.name} available on its BareMetalHost`, async () => bmhStatus(ref.name)?.provisioning?.state === 'available', { timeoutMs: 120_000 });
    }
    const runsBefore = { kept: (await handles.kept.describe()).runId, deleted: (await handles.deleted.describe()).runId };
    await kubeSh('stop', 'apiserver');
    try {
      // Each power change writes status and Events that cannot arrive now; the steps past the
      // history limit make the host hand over at its next idle pass.
      // Sent again on a 503, as the API asks its callers to: under load the host's workflow task may be retried
      // just then, and Temporal refuses updates until it has run (nothing was changed).
      for (const ref of Object.values(refs)) await retryUnavailable(() => harness.hosts.holdPowerOff(ref, 'outage'));
      for (const [key, handle] of Object.entries(handles)) {
        await waitFor(`${key}: off and idle`, async () => {
          const v = await handle.query(hostViewQuery);
          return !v.status.poweredOn && !v.currentOperation ? true : undefined;
        }, { timeoutMs: 120_000 });
      }
      // The delete through the API path is obeyed while the API server is still away.
      await harness.hosts.remove(refs.deleted);
      await waitFor('the deleted host gone', async () => ((await handles.deleted.describe()).status.name === 'COMPLETED' ? true : undefined), { timeoutMs: 120_000 });
      const final = await handles.deleted.result();
      expect(final.operations.at(-1)).toMatchObject({ kind: 'delete', outcome: 'succeeded' });
      // It got there through hand-overs to fresh runs; the other host hands over too, its writes still waiting in the worker.
      expect(await runsSince(handles.deleted, runsBefore.deleted)).toBeGreaterThan(0);
      await waitFor('kept: handed over with its write unfinished', async () => ((await runsSince(handles.kept, runsBefore.kept)) > 0 ? true : undefined), { timeoutMs: 120_000 });
    } finally {
      await kubeSh('start', 'apiserver');
    }
    // What the kept host did meanwhile reaches its BareMetalHost. Polled with short reads: the
    // worker runs in this process, and a long `kubectl wait` would hold its event loop.
    await waitFor('the power change on the BareMetalHost', async () => (bmhStatus(refs.kept.name)?.poweredOn === false ? true : undefined), { timeoutMs: 300_000, intervalMs: 2000 });
    const view = await handles.kept.query(hostViewQuery);
    expect(bmhStatus(refs.kept.name)?.provisioning?.state).toBe(view.status.provisioning.state);
  }, 900_000);
});

