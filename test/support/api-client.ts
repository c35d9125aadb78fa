/**
 * The HTTP API served on a loopback port for a test, and plain JSON calls to
 * it. serveApi writes a token file with an admin token unless given other
 * options; callApi sends the token the server at that base was started with.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../api/server';
import type { HostService } from '../../api/host-service';
import { loadAuthOptions, type AuthOptions } from '../../api/auth/options';
import type { AuditRecord } from '../../api/auth/audit';
import { tokenHash } from '../../api/auth/token-file';
import type { PivotPlaneRegistry } from '../../config/pivot-planes';
import type { FleetPageSettings } from '../../api/fleet-page';
import type { Tracing } from '../../clients/telemetry/tracing';
import type { SiteHealthReader } from '../../control/site-health';

const tokenOf = new Map<string, string>();

/** A token file in a fresh folder: one line per [subject, grants] with a random token each. */
export function writeTokenFile(entries: Array<[subject: string, grants: string]>, extraLines: string[] = []) {
  const tokens: Record<string, string> = {};
  const lines = entries.map(([subject, grants]) => {
    tokens[subject] = randomBytes(24).toString('base64url');
    return `${tokenHash(tokens[subject])} ${subject} ${grants}`;
  });
  const file = join(mkdtempSync(join(tmpdir(), 'metalflow-tokens-')), 'tokens');
  writeFileSync(file, [...lines, ...extraLines, ''].join('\n'), { mode: 0o600 });
  return { file, tokens };
}

export async function serveApi(
  hosts: HostService,
  opts: { env?: NodeJS.ProcessEnv; audit?: AuditRecord[]; pivotPlanes?: PivotPlaneRegistry; page?: FleetPageSettings; tracing?: Tracing; sites?: SiteHealthReader } = {},
): Promise<{ app: FastifyInstance; base: string; auth: AuthOptions }> {
  let env = opts.env;
  let adminToken: string | undefined;
  if (!env) {
    const { file, tokens } = writeTokenFile([['test-admin', 'admin:*']]);
    env = { METALFLOW_API_TOKENS_FILE: file };
    adminToken = tokens['test-admin'];
  }
  const audit = opts.audit;
  const auth = loadAuthOptions(env, '127.0.0.1', (r) => audit?.push(r));
  const app = await buildServer(hosts, { auth, ...(opts.pivotPlanes ? { pivotPlanes: opts.pivotPlanes } : {}), ...(opts.page ? { page: opts.page } : {}), ...(opts.tracing ? { tracing: opts.tracing } : {}), ...(opts.sites ? { sites: opts.sites } : {}) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const base = `${auth.tls ? 'https' : 'http'}://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  if (adminToken) tokenOf.set(base, adminToken);
  return { app, base, auth };
}

export async function callApi(
  base: string,
  method: 'GET' | 'PUT' | 'DELETE' | 'POST',
  path: string,
  body?: unknown,
  opts: { token?: string; headers?: Record<string, string> } = {},
) {
  const token = opts.token ?? tokenOf.get(base);
  // PUT and POST always carry JSON (the API refuses them otherwise): {} when there is nothing to say.
  const sendBody = body !== undefined ? body : method === 'PUT' || method === 'POST' ? {} : undefined;
  const res = await request(`${base}${path}`, {
    method,
    headers: {
      ...(sendBody === undefined ? {} : { 'content-type': 'application/json' }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...opts.headers,
    },
    body: sendBody === undefined ? undefined : JSON.stringify(sendBody),
  });
  const text = await res.body.text();
  // `any`: each test reads the fields of the route it called.
  return { status: res.statusCode, retryAfter: res.headers['retry-after'], traceId: res.headers['x-trace-id'], wwwAuthenticate: res.headers['www-authenticate'], text, json: text ? (JSON.parse(text) as any) : undefined };
}
