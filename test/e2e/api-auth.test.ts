/**
 * API authentication and authorization end to end: real HTTP (and HTTPS with
 * certificates made by the openssl CLI), real Temporal, real Ironic.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import type { FastifyInstance } from 'fastify';
import { callApi, serveApi, writeTokenFile } from '../support/api-client';
import { loadAuthOptions } from '../../api/auth/options';
import type { AuditRecord } from '../../api/auth/audit';
import { randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';

let h: Harness;
let app: FastifyInstance;
let base: string;
let tokens: Record<string, string>;
const audit: AuditRecord[] = [];
const NS = 'auth-a';
const OTHER = 'auth-b';
const apps: FastifyInstance[] = [];

beforeAll(async () => {
  h = await startHarness();
  const file = writeTokenFile([
    ['alice-admin', 'admin:*'],
    ['oscar-operator', `operator:${NS}`],
    ['vera-viewer', `viewer:${NS}`],
    ['bob-admin-b', `admin:${OTHER}`],
  ]);
  tokens = file.tokens;
  ({ app, base } = await serveApi(h.hosts, {
    env: { METALFLOW_API_TOKENS_FILE: file.file, METALFLOW_API_ALLOWED_ORIGINS: 'https://console.example' },
    audit,
  }));
  apps.push(app);
});

afterAll(async () => {
  for (const a of apps) await a.close();
  await h?.close();
});

const as = (who: string, method: 'GET' | 'PUT' | 'DELETE' | 'POST', path: string, body?: unknown, headers?: Record<string, string>) =>
  callApi(base, method, path, body, { token: tokens[who], headers });

const hostBody = (name: string) => ({
  spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` }, bootMACAddress: randomMac(), online: true },
  credentials: { username: 'admin', password: `pw-secret-${name}` },
});

const hostPath = (ns: string, name: string) => `/v1/namespaces/${ns}/hosts/${name}`;

describe('API authentication and roles', { timeout: 300_000 }, () => {
  it('refuses to start without a token source; AUTH=none only on loopback', () => {
    const sink = () => undefined;
    expect(() => loadAuthOptions({}, '127.0.0.1', sink)).toThrow(/METALFLOW_API_TOKENS_FILE is not set/);
    expect(() => loadAuthOptions({ METALFLOW_API_AUTH: 'none' }, '0.0.0.0', sink)).toThrow(/only on a loopback address/);
    expect(loadAuthOptions({ METALFLOW_API_AUTH: 'none' }, '127.0.0.1', sink).tokens).toBeUndefined();
    const plain = writeTokenFile([], ['my-plain-token alice admin:*']);
    expect(() => loadAuthOptions({ METALFLOW_API_TOKENS_FILE: plain.file }, '127.0.0.1', sink)).toThrow(/sha256:<64 hex digits>/);
    const badRole = writeTokenFile([['x', 'root:*']]);
    expect(() => loadAuthOptions({ METALFLOW_API_TOKENS_FILE: badRole.file }, '127.0.0.1', sink)).toThrow(/"root:\*" is not a grant/);
  });

  it('401 with WWW-Authenticate without credentials or with an unknown token', async () => {
    const none = await callApi(base, 'GET', '/v1/hosts', undefined, { token: '' });
    expect(none.status).toBe(401);
    expect(none.wwwAuthenticate).toMatch(/^Bearer/);
    expect(none.json).toEqual({ error: 'Unauthorized', message: expect.stringContaining('Authorization: Bearer'), fields: [] });
    const bad = await callApi(base, 'GET', '/v1/hosts', undefined, { token: 'not-a-token' });
    expect(bad.status).toBe(401);
    expect(bad.json.error).toBe('Unauthorized');
    // Probes and the API description stay open.
    expect((await callApi(base, 'GET', '/healthz', undefined, { token: '' })).status).toBe(200);
  });

  it('403 per role and namespace; a viewer lists only its namespaces; audit lines name who and never a secret', async () => {
    const name = uniq('auth');
    const other = uniq('auth-other');
    const path = hostPath(NS, name);

    const byOperator = await as('oscar-operator', 'PUT', path, hostBody(name));
    expect(byOperator.status).toBe(403);
    expect(byOperator.json).toEqual({ error: 'Forbidden', message: expect.stringContaining('needs role admin'), fields: [] });
    expect((await as('vera-viewer', 'PUT', path, hostBody(name))).status).toBe(403);
    // An admin of another namespace only.
    expect((await as('bob-admin-b', 'PUT', path, hostBody(name))).status).toBe(403);
    expect((await as('bob-admin-b', 'PUT', hostPath(OTHER, other), hostBody(other))).status).toBe(201);
    expect((await as('alice-admin', 'PUT', path, hostBody(name))).status).toBe(201);

    expect((await as('vera-viewer', 'GET', path)).status).toBe(200);
    expect((await as('vera-viewer', 'GET', hostPath(OTHER, other))).status).toBe(403);
    expect((await as('vera-viewer', 'GET', `/v1/hosts?namespace=${OTHER}`)).status).toBe(403);
    await waitFor('both hosts listed', async () => {
      const all = (await as('alice-admin', 'GET', '/v1/hosts')).json.items as Array<{ name: string }>;
      return all.some((i) => i.name === name) && all.some((i) => i.name === other);
    });
    const seen = (await as('vera-viewer', 'GET', '/v1/hosts')).json.items as Array<{ namespace: string; name: string }>;
    expect(seen.map((i) => i.name)).toContain(name);
    expect(seen.every((i) => i.namespace === NS)).toBe(true);

    await waitFor('available and on', async () => {
      const v = (await as('vera-viewer', 'GET', path)).json;
      return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation;
    });
    expect((await as('vera-viewer', 'POST', `${path}/reboot`, {})).status).toBe(403);
    expect((await as('oscar-operator', 'DELETE', path)).status).toBe(403);
    expect((await as('oscar-operator', 'POST', `${path}/reboot`, {})).status).toBe(202);

    const lines = audit.map((r) => JSON.stringify(r));
    expect(audit).toContainEqual(expect.objectContaining({ subject: 'alice-admin', method: 'PUT', namespace: NS, name, status: 201, outcome: 'ok' }));
    expect(audit).toContainEqual(expect.objectContaining({ subject: 'oscar-operator', method: 'PUT', name, status: 403, outcome: 'denied' }));
    expect(audit).toContainEqual(expect.objectContaining({ subject: 'oscar-operator', method: 'POST', route: '/v1/namespaces/:namespace/hosts/:name/reboot', status: 202 }));
    expect(lines.join('\n')).not.toContain('pw-secret');
    for (const t of Object.values(tokens)) expect(lines.join('\n')).not.toContain(t);

    for (const [who, ns, n] of [['alice-admin', NS, name], ['bob-admin-b', OTHER, other]] as const) {
      expect((await as(who, 'DELETE', hostPath(ns, n))).status).toBe(202);
    }
  });

  it('refuses cross-site requests: foreign Origin, wrong Host, a POST without a JSON content type', async () => {
    const path = hostPath(NS, uniq('nobody'));
    const cross = await as('alice-admin', 'POST', `${path}/reboot`, {}, { origin: 'https://evil.example' });
    expect(cross.status).toBe(403);
    expect(cross.json.message).toContain('Origin "https://evil.example" is not allowed');
    // An allowed origin passes the check (the host does not exist: 404).
    expect((await as('alice-admin', 'POST', `${path}/reboot`, {}, { origin: 'https://console.example' })).status).toBe(404);
    const rebound = await as('alice-admin', 'GET', '/v1/hosts', undefined, { host: 'attacker.example:80' });
    expect(rebound.status).toBe(403);
    expect(rebound.json.message).toContain('Host "attacker.example:80" is not served here');

    // A body-less POST as a cross-site <form> or fetch() without preflight would send it, even carrying a token.
    for (const headers of [{}, { 'content-type': 'text/plain' }, { 'content-type': 'application/x-www-form-urlencoded' }]) {
      const res = await request(`${base}${path}/reboot`, { method: 'POST', headers: { authorization: `Bearer ${tokens['alice-admin']}`, ...headers } });
      expect(res.statusCode).toBe(415);
      expect(((await res.body.json()) as { error: string }).error).toBe('UnsupportedMediaType');
    }
  });

  it('serves over TLS, and with mTLS maps a client certificate CN to its roles', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'metalflow-tls-'));
    const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
    ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=metalflow test CA', '-keyout', 'ca.key', '-out', 'ca.crt');
    const leaf = (cn: string, ext: string) => {
      ssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${cn}`, '-keyout', `${cn}.key`, '-out', `${cn}.csr`);
      execFileSync('sh', ['-c', `printf '%s\\n' '${ext}' > ${cn}.ext`], { cwd: dir });
      ssl('x509', '-req', '-in', `${cn}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1', '-extfile', `${cn}.ext`, '-out', `${cn}.crt`);
    };
    leaf('server', 'subjectAltName=IP:127.0.0.1,DNS:localhost');
    leaf('ops-robot', 'extendedKeyUsage=clientAuth');
    leaf('stranger', 'extendedKeyUsage=clientAuth');
    const file = writeTokenFile([['tls-viewer', `viewer:${NS}`]], [`x509:ops-robot ops-robot operator:${NS}`]);
    const tls = await serveApi(h.hosts, {
      env: {
        METALFLOW_API_TOKENS_FILE: file.file,
        METALFLOW_API_TLS_CERT_FILE: join(dir, 'server.crt'),
        METALFLOW_API_TLS_KEY_FILE: join(dir, 'server.key'),
        METALFLOW_API_TLS_CLIENT_CA_FILE: join(dir, 'ca.crt'),
      },
    });
    apps.push(tls.app);
    expect(tls.base).toMatch(/^https:/);
    const ca = readFileSync(join(dir, 'ca.crt'));
    const get = async (path: string, agent: Agent, token?: string) => {
      const res = await request(`${tls.base}${path}`, { dispatcher: agent, headers: token ? { authorization: `Bearer ${token}` } : {} });
      return { status: res.statusCode, json: (await res.body.json()) as { error?: string; items?: unknown[] } };
    };
    const plainAgent = new Agent({ connect: { ca } });
    const robot = new Agent({ connect: { ca, cert: readFileSync(join(dir, 'ops-robot.crt')), key: readFileSync(join(dir, 'ops-robot.key')) } });
    const stranger = new Agent({ connect: { ca, cert: readFileSync(join(dir, 'stranger.crt')), key: readFileSync(join(dir, 'stranger.key')) } });

    expect((await get('/v1/hosts', plainAgent)).status).toBe(401);
    expect((await get('/v1/hosts', plainAgent, file.tokens['tls-viewer'])).status).toBe(200);
    expect((await get(`/v1/hosts?namespace=${NS}`, robot)).status).toBe(200);
    expect((await get(`/v1/hosts?namespace=${OTHER}`, robot)).status).toBe(403);
    expect((await get('/v1/hosts', stranger)).status).toBe(401);
    // The certificate maps to an operator: an admin route is refused.
    const put = await request(`${tls.base}${hostPath(NS, uniq('x'))}`, {
      method: 'PUT',
      dispatcher: robot,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(hostBody('x')),
    });
    expect(put.statusCode).toBe(403);
    await put.body.text();
    for (const a of [plainAgent, robot, stranger]) await a.close();
  });
});
