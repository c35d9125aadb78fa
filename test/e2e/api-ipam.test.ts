/**
 * IP pools through the HTTP API (real HTTP, real Temporal): Metal3-shaped
 * objects, field errors, the full pool as a 409 naming the pool and its size,
 * release and reuse, roles, and the OpenAPI document listing the routes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { callApi, serveApi, writeTokenFile } from '../support/api-client';
import { startHarness, uniq, type Harness } from '../support/harness';

let h: Harness;
let app: FastifyInstance;
let base: string;
let tokens: Record<string, string>;
const NS = 'ipam-api';

beforeAll(async () => {
  h = await startHarness();
  const file = writeTokenFile([
    ['admin', 'admin:*'],
    ['operator', `operator:${NS}`],
    ['viewer', `viewer:${NS}`],
  ]);
  tokens = file.tokens;
  ({ app, base } = await serveApi(h.hosts, { env: { METALFLOW_API_TOKENS_FILE: file.file } }));
}, 120_000);

afterAll(async () => {
  await app?.close();
  await h?.close();
});

const as = (who: string, method: 'GET' | 'PUT' | 'DELETE' | 'POST', path: string, body?: unknown) => callApi(base, method, path, body, { token: tokens[who] });

describe('IP pools over HTTP', () => {
  it('creates a pool, claims, fills it, releases and reuses', async () => {
    const pool = uniq('pool');
    const path = `/v1/namespaces/${NS}/ippools/${pool}`;
    const created = await as('admin', 'PUT', path, { spec: { namePrefix: `${pool}-prov`, pools: [{ start: '192.168.0.10', end: '192.168.0.11', prefix: 24, gateway: '192.168.0.1' }] } });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPPool', size: '2', allocated: 0 });

    const a = await as('operator', 'PUT', `${path}/claims/host-a`);
    expect(a.status).toBe(200);
    expect(a.json).toMatchObject({
      kind: 'IPClaim',
      status: { address: { name: `${pool}-prov-192-168-0-10`, namespace: NS } },
      ipAddress: { kind: 'IPAddress', spec: { address: '192.168.0.10', prefix: 24, gateway: '192.168.0.1', claim: { name: 'host-a' }, pool: { name: pool } } },
    });
    expect((await as('operator', 'PUT', `${path}/claims/host-a`)).json.ipAddress.spec.address).toBe('192.168.0.10');
    expect((await as('operator', 'PUT', `${path}/claims/host-b`)).json.ipAddress.spec.address).toBe('192.168.0.11');
    const full = await as('operator', 'PUT', `${path}/claims/host-c`);
    expect(full.status).toBe(409);
    expect(full.json.error).toBe('PoolExhausted');
    expect(full.json.message).toContain(`pool ${NS}/${pool} has 2 address(es)`);

    expect((await as('viewer', 'GET', `${path}/claims/host-b`)).json.ipAddress.spec.address).toBe('192.168.0.11');
    expect((await as('viewer', 'GET', `${path}/claims`)).json.items).toEqual([
      { claim: 'host-a', address: '192.168.0.10' },
      { claim: 'host-b', address: '192.168.0.11' },
    ]);
    expect((await as('viewer', 'GET', path)).json.status.indexes).toEqual({ 'host-a': '192.168.0.10', 'host-b': '192.168.0.11' });

    expect((await as('admin', 'DELETE', path)).status).toBe(409);
    expect((await as('operator', 'DELETE', `${path}/claims/host-a`)).json.released).toMatchObject({ address: '192.168.0.10' });
    expect((await as('viewer', 'GET', `${path}/claims/host-a`)).status).toBe(404);
    expect((await as('operator', 'PUT', `${path}/claims/host-c`)).json.ipAddress.spec.address).toBe('192.168.0.10');
  }, 60_000);

  it('answers bad input field by field, and roles as the table says', async () => {
    const path = `/v1/namespaces/${NS}/ippools/${uniq('pool')}`;
    const bad = await as('admin', 'PUT', path, { spec: { namePrefix: 'p', pools: [{ start: '10.0.0.9', end: '10.0.0.1' }], preAllocations: { x: 'nope' } } });
    expect(bad.status).toBe(400);
    expect(bad.json.fields.map((f: { field: string }) => f.field)).toEqual(['spec.pools[0].end', 'spec.preAllocations.x']);
    expect((await as('admin', 'PUT', path, { spec: { pools: [] } })).json.fields).toEqual([{ field: 'spec.namePrefix', reason: 'is required' }]);
    expect((await as('operator', 'PUT', path, { spec: { namePrefix: 'p', pools: [{ subnet: '10.0.0.0/24' }] } })).status).toBe(403);
    expect((await as('viewer', 'PUT', `${path}/claims/x`)).status).toBe(403);
    expect((await as('viewer', 'GET', path)).status).toBe(404);
    const openapi = await callApi(base, 'GET', '/openapi.json');
    expect(Object.keys(openapi.json.paths)).toEqual(expect.arrayContaining(['/v1/namespaces/{namespace}/ippools/{name}', '/v1/namespaces/{namespace}/ippools/{name}/claims/{claim}', '/v1/ippools']));
  }, 60_000);
});
