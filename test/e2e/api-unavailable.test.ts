/**
 * When Temporal cannot take a change, the HTTP API answers 503 with
 * Retry-After instead of hanging or failing with 500: against the real dev
 * server with no worker on the host's task queue, and against a Temporal
 * address nothing listens on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { HostService } from '../../api/host-service';
import { callApi, serveApi } from '../support/api-client';
import { unusedPort } from '../support/ports';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';

const NS = 'api-busy';
let h: Harness;
let running: Promise<void> | undefined;
const apps: FastifyInstance[] = [];
const connections: Connection[] = [];

async function serve(hosts: HostService): Promise<string> {
  const { app, base } = await serveApi(hosts);
  apps.push(app);
  return base;
}

const hostBody = (name: string, password: string) => ({
  spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` }, bootMACAddress: randomMac(), online: true },
  credentials: { username: 'admin', password },
});

beforeAll(async () => {
  // The harness's worker is built but not run: nothing serves its task queue until a test says so.
  h = await startHarness({ startWorker: false });
});

afterAll(async () => {
  for (const app of apps) await app.close();
  for (const c of connections) await c.close();
  if (running) {
    h.worker.shutdown();
    await running;
  }
  await h?.env.teardown();
});

describe('HTTP API when Temporal cannot take a change', { timeout: 240_000 }, () => {
  it('answers 503 with Retry-After when no worker takes the update in time; repeating the request once one runs succeeds', async () => {
    const base = await serve(new HostService({ client: h.client, secrets: h.secrets, taskQueue: h.taskQueue, hostOptions: FAST_HOST_OPTIONS, updateTimeoutMs: 2_000 }));
    const name = uniq('busy');
    const password = `pw-${name}`;
    const body = hostBody(name, password);

    const started = Date.now();
    const first = await callApi(base, 'PUT', `/v1/namespaces/${NS}/hosts/${name}`, body);
    expect(first.status).toBe(503);
    expect(first.retryAfter).toBe('2');
    expect(first.json).toMatchObject({ error: 'Unavailable', message: expect.stringMatching(/may or may not have been applied.*Repeat the same request/) });
    expect(first.text).not.toContain(password);
    // Bounded by the update timeout, not by the client's endless re-sending.
    expect(Date.now() - started).toBeLessThan(30_000);
    // The server may still apply the change, which needs its credentials: they stay.
    expect((await h.secrets.read(NS, `${name}-bmc-secret`))?.password).toBe(password);

    running = h.worker.run();
    const again = await waitFor('the repeated PUT is taken', async () => {
      const r = await callApi(base, 'PUT', `/v1/namespaces/${NS}/hosts/${name}`, body);
      return r.status !== 503 && r;
    }, { timeoutMs: 120_000, intervalMs: 1_000 });
    expect([200, 201]).toContain(again.status);
    const view = await callApi(base, 'GET', `/v1/namespaces/${NS}/hosts/${name}`);
    expect(view.json).toMatchObject({ spec: { bootMACAddress: body.spec.bootMACAddress, bmc: { address: `fake://${name}` } } });
    await h.hosts.remove({ namespace: NS, name });
  });

  it('answers 503 and leaves no secret behind when Temporal is unreachable', async () => {
    const connection = Connection.lazy({
      // Nothing listens there: a Temporal server that is down.
      address: `127.0.0.1:${await unusedPort()}`,
      // Few quick retries, so the test does not sit through the SDK's default backoff.
      interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: 2, initialIntervalMs: () => 50 }))],
    });
    connections.push(connection);
    const down = new HostService({ client: new Client({ connection, namespace: 'default' }), secrets: h.secrets, taskQueue: h.taskQueue, updateTimeoutMs: 5_000 });
    const base = await serve(down);
    const name = uniq('down');
    const password = `pw-${name}`;

    const put = await callApi(base, 'PUT', `/v1/namespaces/${NS}/hosts/${name}`, hostBody(name, password));
    expect(put.status).toBe(503);
    expect(put.retryAfter).toBe('2');
    expect(put.json).toMatchObject({ error: 'Unavailable', message: expect.stringMatching(/UNAVAILABLE.*nothing was changed/) });
    expect(put.text).not.toContain(password);
    expect(await h.secrets.read(NS, `${name}-bmc-secret`)).toBeUndefined();

    const get = await callApi(base, 'GET', `/v1/namespaces/${NS}/hosts/${name}`);
    expect(get.status).toBe(503);
    expect(get.json).toMatchObject({ error: 'Unavailable' });
  });
});
