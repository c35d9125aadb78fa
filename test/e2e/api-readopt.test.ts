/**
 * A host whose workflow ended abnormally (here: terminated) is not a deleted
 * host: the API shows its last state, re-adopts it on the next change, and a
 * provisioned node stays provisioned. Ironic sits behind the counting proxy,
 * so "no new deploy" is counted on the wire, not inferred.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { callApi, serveApi } from '../support/api-client';
import { IRONIC_URL } from '../support/env';
import { IronicProxy, type RecordedRequest } from '../../bench/support/ironic-proxy';
import { randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { hostWorkflowId } from '../../model/host-ref';

let h: Harness;
let app: FastifyInstance;
let base: string;
let proxy: IronicProxy;
const NS = 'readopt';

beforeAll(async () => {
  proxy = new IronicProxy(IRONIC_URL);
  await proxy.start();
  h = await startHarness({ ironicUrl: proxy.url });
  ({ app, base } = await serveApi(h.hosts));
});

afterAll(async () => {
  await app?.close();
  await h?.close();
  await proxy?.stop();
});

const call = (method: 'GET' | 'PUT' | 'DELETE' | 'POST', path: string, body?: unknown) => callApi(base, method, path, body);
const hostPath = (name: string) => `/v1/namespaces/${NS}/hosts/${name}`;
const image = { url: 'http://127.0.0.1/images/readopt.qcow2', checksum: 'e'.repeat(64), checksumType: 'sha256', format: 'qcow2' };
const hostBody = (name: string) => ({
  spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` }, bootMACAddress: randomMac(), online: true, image },
  credentials: { username: 'admin', password: `pw-${name}` },
});
/** Every provision-state change (manage, inspect, provide, deploy, undeploy, adopt) sent to a node. */
const provisionVerbs = (nodeId: string) => (r: RecordedRequest) => r.method === 'PUT' && r.path.endsWith(`/nodes/${nodeId}/states/provision`);
const settle = <T>(what: string, probe: () => Promise<T | undefined | false>) => waitFor(what, probe, { timeoutMs: 180_000 });

/** A provisioned host whose workflow was then terminated; returns its node id. */
async function provisionedThenTerminated(name: string, body = hostBody(name)): Promise<string> {
  expect((await call('PUT', hostPath(name), body)).status).toBe(201);
  await settle('provisioned', async () => (await call('GET', hostPath(name))).json?.status?.provisioning?.state === 'provisioned');
  const nodeId: string = (await call('GET', hostPath(name))).json.status.provisioning.ID;
  const handle = h.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name }));
  await handle.terminate('test: the host workflow ends abnormally');
  expect((await handle.describe()).status.name).toBe('TERMINATED');
  return nodeId;
}

describe('a host whose workflow ended abnormally (HTTP API)', { timeout: 600_000 }, () => {
  it('reads as its last state, and a re-create re-adopts it provisioned with no new deploy', async () => {
    const name = uniq('readopt');
    const body = hostBody(name);
    const nodeId = await provisionedThenTerminated(name, body);
    const verbsBefore = proxy.count(provisionVerbs(nodeId));

    // Not a 404: the host exists, and the read says its workflow ended.
    const read = await call('GET', hostPath(name));
    expect(read.status).toBe(200);
    expect(read.json.status.provisioning).toMatchObject({ state: 'provisioned', ID: nodeId });
    expect(read.json.workflowEnded).toMatchObject({ status: 'TERMINATED' });
    expect(read.json.workflowEnded.message).toMatch(/re-adopts/);
    // Nor is it left out of the list.
    const listed = await settle('listed as ended', async () => {
      const items: { name: string; workflowEnded?: string }[] = (await call('GET', `/v1/hosts?namespace=${NS}`)).json.items;
      return items.find((i) => i.name === name && i.workflowEnded === 'TERMINATED');
    });
    expect(listed).toMatchObject({ provisioningState: 'provisioned' });

    // A bad image is refused against the last spec before anything is re-adopted (a refusal would not undo that).
    const badImage = await call('PUT', `${hostPath(name)}/image`, { ...image, checksum: 'abc' });
    expect(badImage.status, JSON.stringify(badImage.json)).toBe(400);
    expect(badImage.json.fields.find((x: { field: string }) => x.field === 'spec.image.checksum')).toBeDefined();
    expect((await call('GET', hostPath(name))).json.workflowEnded).toMatchObject({ status: 'TERMINATED' });

    // The same create again: re-adopted (200, not created), never registered and inspected from nothing.
    const again = await call('PUT', hostPath(name), body);
    expect(again.status).toBe(200);
    const view = await settle('re-adopted', async () => {
      const v = (await call('GET', hostPath(name))).json;
      const enrolled = v?.operations?.some((o: { kind: string; outcome: string }) => o.kind === 'enroll' && o.outcome === 'succeeded');
      return enrolled && !v.currentOperation && v.status.provisioning.state === 'provisioned' ? v : undefined;
    });
    expect(view.workflowEnded).toBeUndefined();
    expect(view.status.operationalStatus).toBe('OK');
    expect(view.status.provisioning.ID).toBe(nodeId);
    expect(view.operations.map((o: { kind: string }) => o.kind)).toEqual(['enroll']);
    expect((await h.ironic.getNode(nodeId))?.provision_state).toBe('active');
    // Adopting an active node sends it no provision-state change at all: no deploy, no inspection.
    expect(proxy.count(provisionVerbs(nodeId))).toBe(verbsBefore);
    const relisted = (await call('GET', `/v1/hosts?namespace=${NS}`)).json.items.filter((i: { name: string }) => i.name === name);
    expect(relisted).toEqual([expect.not.objectContaining({ workflowEnded: expect.anything() })]);

    expect((await call('DELETE', hostPath(name))).status).toBe(202);
    await settle('gone', async () => (await call('GET', hostPath(name))).status === 404);
  });

  it('deletes such a host properly: re-adopted, deprovisioned and removed from Ironic', async () => {
    const name = uniq('readopt-del');
    const nodeId = await provisionedThenTerminated(name);

    const deleted = await call('DELETE', hostPath(name));
    expect(deleted.status).toBe(202);
    expect(deleted.json.deleteRequested).toBe(true);
    await settle('gone', async () => (await call('GET', hostPath(name))).status === 404);
    expect(await h.ironic.getNode(nodeId)).toBeUndefined();
    const undeploys = proxy.requests.filter((r) => provisionVerbs(nodeId)(r) && /"target":\s*"deleted"/.test(r.body));
    expect(undeploys).toHaveLength(1);
  });

  it('re-adopts on an explicit POST …/adopt, and answers 404 for a host never created', async () => {
    const name = uniq('readopt-post');
    const nodeId = await provisionedThenTerminated(name);
    const adopted = await call('POST', `${hostPath(name)}/adopt`);
    expect(adopted.status).toBe(200);
    expect(adopted.json.status.provisioning).toMatchObject({ state: 'provisioned', ID: nodeId });
    expect((await h.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).describe()).status.name).toBe('RUNNING');
    expect((await call('POST', `${hostPath(uniq('never'))}/adopt`)).status).toBe(404);
    expect((await call('DELETE', hostPath(name))).status).toBe(202);
    await settle('gone', async () => (await call('GET', hostPath(name))).status === 404);
  });
});
