/**
 * Two API replicas against the same Temporal and the same secret store folder:
 * each its own HTTP server, host service, Temporal connection and secret store
 * object (nothing shared in memory). Replica A reaches Temporal through a gRPC
 * proxy that can hold its update back, so B's change lands in the middle of
 * A's: B must wait for A's change to end (the host's lease in the secret
 * store), or A's put-back erases B's secrets and a late update of A's leaves
 * B's secrets under A's spec. And a DELETE keeps no call open at Temporal while
 * the host waits (paused), yet its secrets go once it is gone.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { HostService } from '../../api/host-service';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { callApi, serveApi } from '../support/api-client';
import { startGrpcProxy, type GrpcProxy } from '../support/grpc-proxy';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { TEMPORAL_ADDRESS } from '../support/env';

const NS = 'replicas';
const key = randomBytes(32);
let h: Harness;

interface Replica {
  proxy: GrpcProxy;
  connection: Connection;
  hosts: HostService;
  store: LocalSecretStore;
  app: FastifyInstance;
  base: string;
}
let a: Replica;
let b: Replica;

async function replica(): Promise<Replica> {
  const proxy = await startGrpcProxy({ upstream: TEMPORAL_ADDRESS });
  const connection = await Connection.connect({ address: proxy.address });
  const store = new LocalSecretStore(h.secretDir, key);
  const hosts = new HostService({ client: new Client({ connection }), secrets: store, taskQueue: h.taskQueue, hostOptions: FAST_HOST_OPTIONS });
  const { app, base } = await serveApi(hosts);
  return { proxy, connection, hosts, store, app, base };
}

beforeAll(async () => {
  h = await startHarness({ secretKey: key });
  a = await replica();
  b = await replica();
});

afterAll(async () => {
  for (const r of [a, b]) {
    if (!r) continue;
    r.hosts.close();
    await r.app.close();
    await r.connection.close();
    await r.proxy.close();
  }
  await h?.close();
});

const path = (name: string) => `/v1/namespaces/${NS}/hosts/${name}`;
const spec = (name: string, mac: string) => ({ bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` }, bootMACAddress: mac, online: true });
const password = async (name: string) => (await h.secrets.read(NS, `${name}-bmc-secret`))?.password;
const settle = <T>(what: string, probe: () => Promise<T | undefined | false>) => waitFor(what, probe, { timeoutMs: 180_000 });

async function availableHost(name: string, mac: string): Promise<void> {
  const created = await callApi(b.base, 'PUT', path(name), { spec: spec(name, mac), credentials: { username: 'admin', password: 'pw-0' } });
  expect(created.status).toBe(201);
  await settle('available', async () => (await callApi(b.base, 'GET', path(name))).json?.status?.provisioning?.state === 'available');
}

/**
 * A's PUT, held at Temporal after it wrote its secrets, then B's PUT: A is let go once B has
 * written its secrets (no exclusion) or is waiting for A's lease.
 */
async function raced(name: string, bodyA: unknown, bodyB: unknown) {
  const held = a.proxy.hold('ExecuteMultiOperation');
  const putA = callApi(a.base, 'PUT', path(name), bodyA);
  await held.held;
  const putB = callApi(b.base, 'PUT', path(name), bodyB);
  await settle('B wrote its secrets or waits for the lease', async () => b.hosts.leaseWaits > 0 || (await password(name)) === 'pw-b');
  held.release();
  return Promise.all([putA, putB]);
}

describe('two API replicas on one host', { timeout: 600_000 }, () => {
  it("a refused change of one replica does not put back over the other's applied secrets", async () => {
    const name = uniq('rep-refused');
    const mac = randomMac();
    await availableHost(name, mac);
    // A: a provisioner change the workflow refuses (409), with its own password. B: the same spec with another.
    const [ra, rb] = await raced(
      name,
      { spec: { ...spec(name, mac), provisioner: 'direct', bmc: { address: 'redfish+http://127.0.0.1:9/redfish/v1/Systems/1', credentialsName: `${name}-bmc-secret` } }, credentials: { username: 'admin', password: 'pw-a' } },
      { spec: spec(name, mac), credentials: { username: 'admin', password: 'pw-b' } },
    );
    expect(ra.status).toBe(409);
    expect(rb.status).toBe(200);
    expect(await password(name)).toBe('pw-b');
  });

  it("the secrets left are those of the change the host applied last", async () => {
    const name = uniq('rep-both');
    const mac = randomMac();
    await availableHost(name, mac);
    const change = (writer: string) => ({ metadata: { labels: { 'example.com/writer': writer } }, spec: spec(name, mac), credentials: { username: 'admin', password: `pw-${writer}` } });
    const [ra, rb] = await raced(name, change('a'), change('b'));
    expect([ra.status, rb.status]).toEqual([200, 200]);
    const view = (await callApi(b.base, 'GET', path(name))).json;
    expect(await password(name)).toBe(`pw-${view.labels['example.com/writer']}`);
  });

  it('a DELETE of a paused host keeps no call open at Temporal, and its secrets go once it is gone', async () => {
    const names = Array.from({ length: 4 }, () => uniq('rep-del'));
    for (const name of names) {
      expect((await callApi(a.base, 'PUT', path(name), { spec: spec(name, randomMac()), credentials: { username: 'admin', password: 'pw-0' } })).status).toBe(201);
      expect((await callApi(a.base, 'PUT', `${path(name)}/paused`, { reason: 'held' })).status).toBe(200);
    }
    const historyCalls = a.proxy.calls('GetWorkflowExecutionHistory');
    for (const name of names) expect((await callApi(a.base, 'DELETE', path(name))).status).toBe(202);
    // The delete waits for the pause; nothing of this replica waits at Temporal with it.
    expect(a.proxy.calls('GetWorkflowExecutionHistory') - historyCalls).toBe(0);
    expect(a.proxy.open('GetWorkflowExecutionHistory')).toBe(0);
    expect(a.hosts.pendingDeletes).toBe(names.length);

    for (const name of names) expect((await callApi(b.base, 'DELETE', `${path(name)}/paused`)).status).toBe(200);
    // No read of these names meanwhile (a read would remove them too): replica A's own checks do.
    const files = names.map((name) => join(h.secretDir, NS, `${name}-bmc-secret.secret`));
    await settle('secrets of the deleted hosts removed', async () => files.every((f) => !existsSync(f)));
    expect(a.hosts.pendingDeletes).toBe(0);
  });
});
