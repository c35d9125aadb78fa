/**
 * Temporal's remote codec endpoint (`npm run codec-server`), so the Temporal
 * UI ("Codec Server" setting) and `temporal --codec-endpoint … --codec-auth
 * 'Bearer …'` show metalflow's encrypted payloads decoded to an operator who
 * may see every host: a bearer token from the API's tokens file with a grant
 * on namespace `*` (any role). POST /decode and /encode take and return
 * `{"payloads": [{"metadata": {k: base64}, "data": base64}]}`. /encode seals
 * payloads the workers will trust (a workflow input, a signal), so it needs
 * `admin:*`: a viewer may read every host, not forge what a host is told.
 * CORS is granted only to the configured origins (the UI's by default).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Payload } from '@temporalio/common';
import type { EncryptionCodec } from '../clients/temporal/payload-codec';
import { allows } from './auth/roles';
import type { TokenFile } from './auth/token-file';

export interface CodecServerOptions {
  codec: EncryptionCodec;
  tokens: TokenFile;
  /** Origins whose pages may call it (the Temporal UI). */
  corsOrigins: string[];
  /** Largest request body accepted. */
  maxBodyBytes?: number;
}

type WirePayload = { metadata?: Record<string, string>; data?: string };

const toPayload = (p: WirePayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});

const toWire = (p: Payload): WirePayload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage, max: number): Promise<string> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) throw Object.assign(new Error(`request body over ${max} bytes`), { status: 413 });
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function createCodecServer(opts: CodecServerOptions): Server {
  const max = opts.maxBodyBytes ?? 8 * 1024 * 1024;
  return createServer((req, res) => {
    void (async () => {
      const origin = req.headers.origin;
      if (origin && opts.corsOrigins.includes(origin)) {
        res.setHeader('access-control-allow-origin', origin);
        res.setHeader('access-control-allow-credentials', 'true');
        res.setHeader('access-control-allow-headers', 'authorization, content-type, x-namespace');
        res.setHeader('access-control-allow-methods', 'POST, OPTIONS');
        res.setHeader('vary', 'origin');
      } else if (origin) {
        return send(res, 403, { error: 'Forbidden', message: `origin ${origin} is not allowed (METALFLOW_CODEC_CORS_ORIGINS)` });
      }
      if (req.method === 'OPTIONS') {
        res.writeHead(204);
        return res.end();
      }
      const path = (req.url ?? '').split('?')[0];
      if (req.method !== 'POST' || (path !== '/decode' && path !== '/encode')) {
        return send(res, 404, { error: 'NotFound', message: 'POST /decode or /encode' });
      }
      const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
      const principal = m ? opts.tokens.byToken(m[1]!) : undefined;
      if (!principal) {
        res.setHeader('www-authenticate', 'Bearer realm="metalflow-codec"');
        return send(res, 401, { error: 'Unauthorized', message: 'a bearer token from METALFLOW_API_TOKENS_FILE is required' });
      }
      if (!principal.grants.some((g) => g.namespace === '*')) {
        return send(res, 403, { error: 'Forbidden', message: `${principal.subject} has no grant on every namespace ("<role>:*"), which decoding any host's payloads needs` });
      }
      if (path === '/encode' && !allows(principal, 'admin', '*')) {
        return send(res, 403, { error: 'Forbidden', message: `${principal.subject} is not admin:*, which /encode needs (it seals payloads the workers trust); /decode needs only a grant on every namespace` });
      }
      let body: { payloads?: WirePayload[] | null };
      try {
        body = JSON.parse(await readBody(req, max)) as { payloads?: WirePayload[] | null };
      } catch (err) {
        const status = (err as { status?: number }).status ?? 400;
        return send(res, status, { error: 'InvalidRequest', message: status === 413 ? String((err as Error).message) : 'the body must be JSON {"payloads": [...]}' });
      }
      // Go's JSON encodes an empty payload list as null: the Temporal CLI sends that for a query without --input.
      if (typeof body !== 'object' || body === null) return send(res, 400, { error: 'InvalidRequest', message: 'the body must be JSON {"payloads": [...]}' });
      const wire = body.payloads ?? [];
      if (!Array.isArray(wire)) return send(res, 400, { error: 'InvalidRequest', message: 'payloads: an array (or null for none) is required' });
      try {
        const payloads = wire.map(toPayload);
        const out = path === '/decode' ? await opts.codec.decode(payloads) : await opts.codec.encode(payloads);
        send(res, 200, { payloads: out.map(toWire) });
      } catch (err) {
        send(res, 400, { error: 'InvalidRequest', message: (err as Error).message });
      }
    })().catch((err: unknown) => {
      const requestId = randomUUID();
      console.error(JSON.stringify({ msg: 'codec request failed', requestId, err: err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : String(err) }));
      send(res, 500, { error: 'Internal', message: `internal error; the codec server's log has the detail under request id ${requestId}`, requestId });
    });
  });
}
