/**
 * The HTTP API end to end: real HTTP, real Temporal, real Ironic.
 */
import { operationRuns } from '../support/operation-history';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { HostService } from '../../api/host-service';
import { callApi, serveApi } from '../support/api-client';
import { IronicClient } from '../../clients/ironic/client';
import { createWorker } from '../../workers/worker';
import { IRONIC_URL, WORKFLOW_BUNDLE_PATH } from '../support/env';
import { IronicProxy, isDeploy } from '../../bench/support/ironic-proxy';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';

let h: Harness;
let app: FastifyInstance;
let base: string;
let proxy: IronicProxy;
let proxyWorker: { shutdown(): void; done: Promise<void> };
let proxyHosts: HostService;
const NS = 'api';

beforeAll(async () => {
  h = await startHarness();
  ({ app, base } = await serveApi(h.hosts));

  // A second worker and task queue whose Ironic sits behind a proxy, to slow deploys down on demand.
  proxy = new IronicProxy(IRONIC_URL);
  await proxy.start();
  const taskQueue = uniq('tq-proxy');
  const worker = await createWorker(
    { connection: h.nativeConnection, namespace: 'default', taskQueue, ironic: new IronicClient({ url: proxy.url }), secrets: h.secrets, poll: { initialMs: 100, factor: 1.5, maxMs: 1000 } },
    { workflowBundle: { codePath: WORKFLOW_BUNDLE_PATH }, workflowsPath: undefined },
  );
  proxyWorker = { shutdown: () => worker.shutdown(), done: worker.run() };
  proxyHosts = new HostService({ client: h.client, secrets: h.secrets, taskQueue, hostOptions: FAST_HOST_OPTIONS });
});

afterAll(async () => {
  await app?.close();
  proxyWorker?.shutdown();
  await proxyWorker?.done;
  await proxy?.stop();
  await h?.close();
});

const call = (method: 'GET' | 'PUT' | 'DELETE' | 'POST', path: string, body?: unknown, at = base) => callApi(at, method, path, body);

const hostBody = (name: string, over: Record<string, unknown> = {}) => ({
  spec: {
    bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` },
    bootMACAddress: randomMac(),
    online: true,
    ...over,
  },
  credentials: { username: 'admin', password: `pw-${name}` },
});

const image = { url: 'http://127.0.0.1/images/ubuntu.qcow2', checksum: 'd'.repeat(64), checksumType: 'sha256', format: 'qcow2' };

const stateOf = async (name: string, at = base) => (await call('GET', `/v1/namespaces/${NS}/hosts/${name}`, undefined, at)).json?.status?.provisioning?.state;

/**
 * Generous: in the full suite this file runs beside another that shares the
 * one test Ironic, on 2 cores.
 */
const settle = <T>(what: string, probe: () => Promise<T | undefined | false>) => waitFor(what, probe, { timeoutMs: 240_000 });

describe('HTTP API', { timeout: 600_000 }, () => {
  it('serves its OpenAPI document', async () => {
    const res = await call('GET', '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.json.openapi).toBe('3.0.3');
    expect(Object.keys(res.json.paths)).toContain('/v1/namespaces/{namespace}/hosts/{name}');
    expect(JSON.stringify(res.json)).toContain('bootMACAddress');
  });

  it('create → available → provision → provisioned → deprovision → delete → gone', async () => {
    const name = uniq('e2e');
    const body = hostBody(name);
    const created = await call('PUT', `/v1/namespaces/${NS}/hosts/${name}`, body);
    expect(created.status).toBe(201);
    expect(created.text).not.toContain(`pw-${name}`);

    await settle('available', async () => (await stateOf(name)) === 'available');
    const listed = await settle('listed as available', async () => {
      const r = await call('GET', `/v1/hosts?namespace=${NS}&state=available`);
      return r.json.items.some((i: { name: string }) => i.name === name) ? r.json.items : undefined;
    });
    expect(listed.find((i: { name: string }) => i.name === name)).toMatchObject({ namespace: NS, bmcType: 'fake' });

    // A bad image on a running host is refused by the host's update validator (the API does not read the host
    // first): the same 400 with the field, and nothing changes.
    const bad = await call('PUT', `/v1/namespaces/${NS}/hosts/${name}/image`, { ...image, checksum: 'abc' });
    expect(bad.status, JSON.stringify(bad.json)).toBe(400);
    expect(bad.json.error).toBe('InvalidSpec');
    expect(bad.json.fields.find((x: { field: string }) => x.field === 'spec.image.checksum')?.reason).toMatch(/64/);
    expect((await call('GET', `/v1/namespaces/${NS}/hosts/${name}`)).json.spec.image).toBeUndefined();

    const set = await call('PUT', `/v1/namespaces/${NS}/hosts/${name}/image`, image);
    expect(set.status).toBe(200);
    expect(set.json.spec.image.url).toBe(image.url);
    await settle('provisioned', async () => (await stateOf(name)) === 'provisioned');

    const cleared = await call('DELETE', `/v1/namespaces/${NS}/hosts/${name}/image`);
    expect(cleared.status).toBe(200);
    expect(cleared.json.spec.image).toBeUndefined();
    await settle('available again', async () => (await stateOf(name)) === 'available');

    const history = await call('GET', `/v1/namespaces/${NS}/hosts/${name}/history`);
    expect(history.json.operations.map((o: { kind: string }) => o.kind)).toEqual(
      expect.arrayContaining(['enroll', 'inspect', 'prepare', 'provision', 'deprovision']),
    );
    expect(history.json.operationHistory.provision.end).toBeTruthy();
    expect(history.json.operationHistory.deprovision.end).toBeTruthy();

    const nodeId = (await call('GET', `/v1/namespaces/${NS}/hosts/${name}`)).json.status.provisioning.ID;
    const deleted = await call('DELETE', `/v1/namespaces/${NS}/hosts/${name}`);
    expect(deleted.status).toBe(202);
    await settle('gone', async () => (await call('GET', `/v1/namespaces/${NS}/hosts/${name}`)).status === 404);
    expect(await h.ironic.getNode(nodeId)).toBeUndefined();
  });

  it('deletes a provisioned host: deprovisions, powers off, removes the node', async () => {
    const name = uniq('e2e-del');
    await call('PUT', `/v1/namespaces/${NS}/hosts/${name}`, hostBody(name, { image }));
    await settle('provisioned', async () => (await stateOf(name)) === 'provisioned');
    const nodeId = (await call('GET', `/v1/namespaces/${NS}/hosts/${name}`)).json.status.provisioning.ID;
    expect((await call('DELETE', `/v1/namespaces/${NS}/hosts/${name}`)).status).toBe(202);
    await settle('gone', async () => (await call('GET', `/v1/namespaces/${NS}/hosts/${name}`)).status === 404);
    expect(await h.ironic.getNode(nodeId)).toBeUndefined();
    expect(await operationRuns(h.client, { namespace: NS, name }, 'power')).toBe(1);
  });

  it('answers 400 with the field path and reason, and creates nothing', async () => {
    const name = uniq('e2e-bad');
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [hostBody(name, { bootMACAddress: 'zz:zz' }), 'spec.bootMACAddress', /MAC/],
      [hostBody(name, { bmc: { address: 'telnet://x', credentialsName: 'c' } }), 'spec.bmc.address', /accepted schemes|one of/i],
      [hostBody(name, { online: 'yes' }), 'spec.online', /boolean/],
      [hostBody(name, { image: { ...image, checksum: 'abc' } }), 'spec.image.checksum', /64/],
      [{ ...hostBody(name), credentials: { username: 'admin' } }, 'credentials.password', /required/],
    ];
    for (const [body, field, reason] of cases) {
      const res = await call('PUT', `/v1/namespaces/${NS}/hosts/${name}`, body);
      expect(res.status, JSON.stringify(res.json)).toBe(400);
      const f = res.json.fields.find((x: { field: string }) => x.field === field);
      expect(f, JSON.stringify(res.json.fields)).toBeDefined();
      expect(f.reason).toMatch(reason);
    }
    const noSecret = await call('PUT', `/v1/namespaces/${NS}/hosts/${name}`, { spec: hostBody(name).spec });
    expect(noSecret.status).toBe(400);
    expect(noSecret.json.fields[0]).toMatchObject({ field: 'spec.bmc.credentialsName' });
    expect(noSecret.json.fields[0].reason).toMatch(/does not exist/);

    const badName = await call('PUT', `/v1/namespaces/${NS}/hosts/Bad_Name`, hostBody('x'));
    expect(badName.status).toBe(400);
    expect(badName.json.fields[0].field).toBe('metadata.name');
    const badState = await call('GET', '/v1/hosts?state=flying');
    expect(badState.status).toBe(400);
    expect(badState.json.fields[0].field).toBe('query.state');

    expect((await call('GET', `/v1/namespaces/${NS}/hosts/${name}`)).status).toBe(404);
    expect(await h.secrets.read(NS, `${name}-bmc-secret`)).toBeUndefined();
  });

  it('reboots and holds power off over HTTP; 400 for a bad mode or key', async () => {
    const name = uniq('api-pw');
    const path = `/v1/namespaces/${NS}/hosts/${name}`;
    expect((await call('PUT', path, hostBody(name))).status).toBe(201);
    await settle('available and on', async () => {
      const v = (await call('GET', path)).json;
      return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation;
    });
    const bad = await call('POST', `${path}/reboot`, { mode: 'sideways' });
    expect(bad.status).toBe(400);
    expect(bad.json.fields).toEqual([{ field: 'mode', reason: 'must be one of "soft", "hard"' }]);
    expect((await call('PUT', `${path}/power-off-requests/not%20a%20key`, {})).status).toBe(400);
    expect((await call('POST', `/v1/namespaces/${NS}/hosts/${uniq('nobody')}/reboot`)).status).toBe(404);

    const badKey = await callApi(base, 'POST', `${path}/reboot`, {}, { headers: { 'idempotency-key': 'two words' } });
    expect(badKey.status).toBe(400);
    expect(badKey.json.fields[0].field).toBe('header.idempotency-key');

    // Sent twice with one Idempotency-Key (a client resending after a dropped answer): one reboot.
    const key = { headers: { 'idempotency-key': `${name}-reboot-1` } };
    const rebooted = await callApi(base, 'POST', `${path}/reboot`, {}, key);
    expect(rebooted.status).toBe(202);
    expect((await callApi(base, 'POST', `${path}/reboot`, {}, key)).status).toBe(202);
    type Op = { kind: string; outcome: string };
    const afterReboot = await settle('a reboot operation', async () => {
      const v = (await call('GET', path)).json;
      return !v.currentOperation && !v.power.reboot && v.operations.some((o: Op) => o.kind === 'reboot' && o.outcome === 'succeeded') ? v : undefined;
    });
    expect(afterReboot.operations.filter((o: Op) => o.kind === 'reboot')).toHaveLength(1);
    const held = await call('PUT', `${path}/power-off-requests/maintenance`, { mode: 'hard' });
    expect(held.status).toBe(200);
    expect(held.json.power.holds).toEqual({ maintenance: 'hard' });
    await settle('off', async () => (await call('GET', path)).json.status.poweredOn === false);
    const released = await call('DELETE', `${path}/power-off-requests/maintenance`);
    expect(released.json.power.holds).toEqual({});
    await settle('on', async () => (await call('GET', path)).json.status.poweredOn === true);
  });

  it('answers 404 for unknown hosts', async () => {
    for (const [method, path] of [
      ['GET', `/v1/namespaces/${NS}/hosts/nobody`],
      ['DELETE', `/v1/namespaces/${NS}/hosts/nobody`],
      ['PUT', `/v1/namespaces/${NS}/hosts/nobody/image`],
      ['GET', `/v1/namespaces/${NS}/hosts/nobody/history`],
    ] as const) {
      const res = await call(method, path, method === 'PUT' ? image : undefined);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.json.error).toBe('NotFound');
    }
  });

  it('answers 409 to a conflicting change during provisioning and leaves secrets as they were', async () => {
    const name = uniq('e2e-409');
    const path = `/v1/namespaces/${NS}/hosts/${name}`;
    proxy.hold(isDeploy, 4000);
    const { app: app2, base: at } = await serveApi(proxyHosts);
    try {
      const body = hostBody(name, { image });
      expect((await call('PUT', path, body, at)).status).toBe(201);
      await settle('deploy in flight', async () => proxy.count(isDeploy) >= 1);
      expect(await stateOf(name, at)).toBe('provisioning');

      const conflicting = {
        ...body,
        spec: { ...body.spec, image: { ...image, url: 'http://127.0.0.1/images/other.qcow2' } },
        credentials: { username: 'admin', password: 'a-new-password' },
      };
      const res = await call('PUT', path, conflicting, at);
      expect(res.status).toBe(409);
      expect(res.json.message).toMatch(/provisioning http:\/\/127\.0\.0\.1\/images\/ubuntu\.qcow2/);
      expect(await h.secrets.read(NS, `${name}-bmc-secret`)).toEqual(body.credentials);
      expect((await call('PUT', `${path}/image`, conflicting.spec.image, at)).status).toBe(409);

      await settle('provisioned', async () => (await stateOf(name, at)) === 'provisioned');
      const host = (await call('GET', path, undefined, at)).json;
      expect(host.spec.image.url).toBe(image.url);
      expect(proxy.count(isDeploy)).toBe(1);
    } finally {
      await app2.close();
    }
  });
});
