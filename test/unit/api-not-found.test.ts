/**
 * A route the API does not have answers in the documented error shape
 * (`{ error, message, fields }`, docs/api.md), for a caller with a token and
 * one without; and the OpenAPI document names the success codes the routes
 * answer with. Stack-free: no route reaches Temporal.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../api/server';
import { HostService } from '../../api/host-service';
import { loadAuthOptions } from '../../api/auth/options';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { writeTokenFile } from '../support/api-client';

let app: FastifyInstance;
let token: string;

beforeAll(async () => {
  // Never dialled: nothing here reaches Temporal.
  const client = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
  const hosts = new HostService({ client, secrets: new LocalSecretStore(mkdtempSync(join(tmpdir(), 'mf-404-')), randomBytes(32)), taskQueue: 'unused' });
  const { file, tokens } = writeTokenFile([['admin', 'admin:*']]);
  token = tokens.admin!;
  app = await buildServer(hosts, { auth: loadAuthOptions({ METALFLOW_API_TOKENS_FILE: file }, '127.0.0.1', () => {}) });
});
afterAll(async () => app?.close());

describe('unknown routes', () => {
  it('answer 404 NotFound in the API\'s error shape, naming the route', async () => {
    for (const [method, url] of [['GET', '/v1/nope'], ['GET', '/v2/hosts?x=1'], ['DELETE', '/openapi.json'], ['PATCH', '/v1/namespaces/lab/hosts/h1']] as const) {
      const res = await app.inject({ method, url, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, ...(method === 'GET' ? {} : { payload: '{}' }) });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(res.json(), `${method} ${url}`).toEqual({ error: 'NotFound', message: `no route ${method} ${url.split('?')[0]}; the API's routes are listed in /openapi.json`, fields: [] });
    }
  });

  it('without a token, the answer keeps the same shape', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/nope' });
    const body = res.json() as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['error', 'fields', 'message']);
    expect([401, 404]).toContain(res.statusCode);
  });
});

describe('the OpenAPI document', () => {
  it('names the success code each route answers with where it is not 200', async () => {
    const res = await app.inject({ method: 'GET', url: '/openapi.json', headers: { authorization: `Bearer ${token}` } });
    const paths = (res.json() as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> }).paths;
    const codes = (path: string, method: string): string[] => Object.keys(paths[`/v1/namespaces/{namespace}/hosts/{name}${path}`]?.[method]?.responses ?? {}).sort();
    expect(codes('', 'delete')).toEqual(['202']);
    expect(codes('/reboot', 'post')).toEqual(['202']);
    expect(codes('/clean', 'post')).toEqual(['202']);
    expect(codes('/remediations', 'post')).toEqual(['201']);
    expect(codes('/firmware-settings', 'put')).toEqual(['200', '202']);
    expect(codes('', 'get')).toEqual(['200']);
  });
});
