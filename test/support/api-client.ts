/** The HTTP API served on a loopback port for a test, and plain JSON calls to it. */
import { request } from 'undici';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../api/server';
import type { HostService } from '../../api/host-service';

export async function serveApi(hosts: HostService): Promise<{ app: FastifyInstance; base: string }> {
  const app = await buildServer(hosts);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  return { app, base: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}` };
}

export async function callApi(base: string, method: 'GET' | 'PUT' | 'DELETE' | 'POST', path: string, body?: unknown) {
  const res = await request(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  // `any`: each test reads the fields of the route it called.
  return { status: res.statusCode, retryAfter: res.headers['retry-after'], text, json: text ? (JSON.parse(text) as any) : undefined };
}
