/**
 * The request checks every API call passes before its handler: Host and
 * Origin (against DNS rebinding and cross-site pages), a JSON content type on
 * state-changing methods (a cross-site form or body-less POST cannot set one
 * without a CORS preflight, which this API never grants), then who the caller
 * is (bearer token or client certificate) and whether its role allows the
 * route in that namespace. Changes are audited once answered.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TLSSocket } from 'node:tls';
import { actionFor, PAGE_ROUTES, PUBLIC_ROUTES, SCOPED_BY_HANDLER } from './actions';
import type { AuthOptions } from './options';
import { allows, roleFor, type Principal } from './roles';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}

const ANONYMOUS_ADMIN: Principal = { subject: 'anonymous', grants: [{ role: 'admin', namespace: '*' }], via: 'none' };
const CHANGES = new Set(['PUT', 'POST', 'PATCH', 'DELETE']);
const NEEDS_JSON = new Set(['PUT', 'POST', 'PATCH']);

function refuse(reply: FastifyReply, status: number, error: string, message: string, field?: string): FastifyReply {
  if (status === 401) void reply.header('www-authenticate', 'Bearer realm="metalflow"');
  return reply.status(status).send({ error, message, fields: field ? [{ field, reason: message }] : [] });
}

function hostName(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^(\[[^\]]+\]|[^:]+)(?::\d+)?$/.exec(header.trim().toLowerCase());
  return m?.[1];
}

async function identify(req: FastifyRequest, opts: AuthOptions): Promise<Principal | 'bad' | undefined> {
  if (!opts.tokens && !opts.kube) return ANONYMOUS_ADMIN;
  const auth = req.headers.authorization;
  if (auth !== undefined) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (!m) return 'bad';
    return opts.tokens?.byToken(m[1]!) ?? (await opts.kube?.review(m[1]!)) ?? 'bad';
  }
  const socket = req.raw.socket as Partial<TLSSocket>;
  if (socket.authorized && socket.getPeerCertificate) {
    const cn = socket.getPeerCertificate().subject?.CN;
    const name = Array.isArray(cn) ? cn[0] : cn;
    return (name && opts.tokens?.byCertificate(name)) || 'bad';
  }
  return undefined;
}

/** May the request's caller view hosts in `namespace`? For filtering lists. */
export function canView(req: FastifyRequest, namespace: string): boolean {
  return req.principal !== undefined && allows(req.principal, 'view', namespace);
}

export function installGuard(app: FastifyInstance, opts: AuthOptions): void {
  app.decorateRequest('principal', undefined);

  app.addHook('onRequest', async (req, reply) => {
    const route = req.routeOptions.url ?? req.url.split('?')[0]!;
    const method = req.method;
    if (PUBLIC_ROUTES.has(`${method} ${route}`)) return;
    const host = hostName(req.headers.host);
    if (!host || !opts.allowedHosts.includes(host)) {
      return refuse(reply, 403, 'Forbidden', `Host "${req.headers.host ?? ''}" is not served here; allowed: ${opts.allowedHosts.join(', ')} (METALFLOW_API_ALLOWED_HOSTS)`);
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !opts.allowedOrigins.includes(origin)) {
      return refuse(reply, 403, 'Forbidden', `Origin "${origin}" is not allowed (METALFLOW_API_ALLOWED_ORIGINS)`);
    }
    if (PAGE_ROUTES.has(`${method} ${route}`)) return;
    if (NEEDS_JSON.has(method) && !/^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? '')) {
      return refuse(reply, 415, 'UnsupportedMediaType', `${method} needs "content-type: application/json" (send {} when there is nothing to say)`, 'header.content-type');
    }
    const who = await identify(req, opts);
    if (who === undefined) return refuse(reply, 401, 'Unauthorized', 'no credentials: send "Authorization: Bearer <token>"');
    if (who === 'bad') return refuse(reply, 401, 'Unauthorized', 'the token or client certificate is not known');
    req.principal = who;
    // No route matched: the not-found handler answers, whatever the caller's roles.
    if (req.routeOptions.url === undefined) return;
    if (SCOPED_BY_HANDLER.has(`${method} ${route}`)) return;
    const action = actionFor(method, route);
    const namespace = (req.params as { namespace?: string }).namespace ?? (req.query as { namespace?: string }).namespace;
    // A list without a namespace is filtered by the handler (canView); with one, it must be viewable.
    if (namespace === undefined ? action !== 'view' : !allows(who, action, namespace)) {
      return refuse(
        reply,
        403,
        'Forbidden',
        `${who.subject} may not ${method} ${route} in namespace ${namespace ?? '*'}: it needs role ${roleFor(action)} there`,
      );
    }
  });

  app.addHook('onResponse', async (req, reply) => {
    if (!CHANGES.has(req.method)) return;
    const params = req.params as { namespace?: string; name?: string };
    const status = reply.statusCode;
    opts.audit({
      time: new Date().toISOString(),
      subject: req.principal?.subject ?? 'unauthenticated',
      via: req.principal?.via ?? 'none',
      method: req.method,
      route: req.routeOptions.url ?? 'unknown',
      namespace: params.namespace,
      name: params.name,
      status,
      outcome: status === 401 || status === 403 || status === 415 ? 'denied' : status < 400 ? 'ok' : 'failed',
    });
  });
}
