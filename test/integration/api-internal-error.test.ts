/**
 * An unexpected failure behind a route (here: the API's secret store folder
 * replaced by a file, so writing a host's credentials fails with the
 * folder's path in the error) answers 500 with a request id and a generic
 * message; the detail is in the API's log under that id, never in the answer.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../api/server';
import { HostService } from '../../api/host-service';
import { loadAuthOptions } from '../../api/auth/options';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { SUSHY_URL, TEMPORAL_ADDRESS } from '../support/env';
import { writeTokenFile } from '../support/api-client';
import { randomMac, uniq } from '../support/harness';

let connection: Connection;
let app: FastifyInstance;
let base: string;
let token: string;
let storeDir: string;
const logLines: string[] = [];

beforeAll(async () => {
  connection = await Connection.connect({ address: TEMPORAL_ADDRESS });
  storeDir = join(mkdtempSync(join(tmpdir(), 'metalflow-broken-store-')), 'secrets');
  const secrets = new LocalSecretStore(storeDir, randomBytes(32));
  // The store's folder is a file: every write fails with an error naming the path.
  writeFileSync(storeDir, 'not a folder');
  const hosts = new HostService({ client: new Client({ connection }), secrets, taskQueue: uniq('tq-unused') });
  const { file, tokens } = writeTokenFile([['admin', 'admin:*']]);
  token = tokens.admin!;
  app = await buildServer(hosts, { auth: loadAuthOptions({ METALFLOW_API_TOKENS_FILE: file }, '127.0.0.1', () => {}), logger: { level: 'error', stream: { write: (line) => void logLines.push(line) } } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
});
afterAll(async () => {
  await app?.close();
  await connection?.close();
  rmSync(storeDir, { force: true });
});

describe('internal errors', () => {
  it('answer a request id and a generic message; the log has the detail under that id', async () => {
    const name = uniq('internal');
    const res = await request(`${base}/v1/namespaces/lab/hosts/${name}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({
        spec: { bootMACAddress: randomMac(), bmc: { address: `redfish+${SUSHY_URL}/redfish/v1/Systems/x`, credentialsName: `${name}-bmc` }, online: false },
        credentials: { username: 'admin', password: 'password' },
      }),
    });
    const text = await res.body.text();
    expect(res.statusCode).toBe(500);
    const body = JSON.parse(text) as { error: string; message: string; requestId: string };
    expect(body.error).toBe('Internal');
    expect(body.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.headers['x-request-id']).toBe(body.requestId);
    expect(body.message).toBe(`internal error; the API's log has the detail under request id ${body.requestId}`);
    expect(text).not.toContain(storeDir);
    expect(text).not.toMatch(/ENOTDIR|EEXIST/);

    const logged = logLines.map((l) => JSON.parse(l) as { reqId?: string; msg?: string; err?: { message?: string } }).find((l) => l.reqId === body.requestId && l.msg === 'request failed');
    expect(logged?.err?.message).toContain(storeDir);
  });
});
