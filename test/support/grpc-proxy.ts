/**
 * An HTTP/2 proxy in front of the Temporal dev server, which serves neither
 * TLS nor API keys (`temporal server start-dev` has no TLS options): it
 * terminates TLS (optionally requiring a client certificate from a given
 * CA, as a Temporal frontend with mTLS does), refuses calls without the
 * expected `authorization: Bearer <API key>` with gRPC UNAUTHENTICATED (as
 * Temporal Cloud does), and passes every other call, stream by stream, to the
 * dev server over plain HTTP/2. It records what it saw (authorization
 * headers, client certificate names, the calls by method and which are still
 * open) so a test can show what was sent, and can hold a call back until the
 * test lets it go.
 */
import { connect, constants, createSecureServer, createServer, type ClientHttp2Session, type Http2Server, type Http2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';

export interface GrpcProxyOptions {
  /** `host:port` of the plain (h2c) gRPC server behind the proxy. */
  upstream: string;
  tls?: { cert: Buffer; key: Buffer; /** Require a client certificate this CA signed. */ clientCa?: Buffer };
  /** Refuse calls whose authorization is not `Bearer <apiKey>`. */
  apiKey?: string;
}

export interface GrpcProxy {
  /** `127.0.0.1:<port>` */
  address: string;
  /** The authorization header of every call, as received (undefined when absent). */
  authorizations: (string | undefined)[];
  /** CN of each client certificate a TLS connection presented. */
  clientCertificates: string[];
  /** Calls refused for a missing or wrong API key. */
  refused: number;
  /** Calls of `method` (e.g. `GetWorkflowExecutionHistory`) seen so far. */
  calls(method: string): number;
  /** Calls of `method` open now (sent and not yet answered in full). */
  open(method: string): number;
  /** Holds the next call of `method` before it reaches the server; `held` settles once one is held. */
  hold(method: string): { held: Promise<void>; release(): void };
  close(): Promise<void>;
}

const methodOf = (path: string | string[] | undefined): string => String(path ?? '').split('/').pop() ?? '';

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'http2-settings']);

function forwardable(headers: IncomingHttpHeaders, keepPseudo: (name: string) => boolean): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    if (name.startsWith(':') && !keepPseudo(name)) continue;
    out[name] = value;
  }
  return out;
}

export async function startGrpcProxy(opts: GrpcProxyOptions): Promise<GrpcProxy> {
  let upstream: ClientHttp2Session | undefined;
  const upstreamSession = (): ClientHttp2Session => {
    if (!upstream || upstream.closed || upstream.destroyed) {
      const session = connect(`http://${opts.upstream}`);
      session.on('error', () => undefined);
      session.on('close', () => {
        if (upstream === session) upstream = undefined;
      });
      upstream = session;
    }
    return upstream;
  };
  const state: Pick<GrpcProxy, 'authorizations' | 'clientCertificates' | 'refused'> = { authorizations: [], clientCertificates: [], refused: 0 };
  const sessions = new Set<Http2Session>();
  const seen = new Map<string, number>();
  const openCalls = new Map<string, number>();
  const holds: { method: string; gate: Promise<void>; onHeld: () => void }[] = [];
  const bump = (m: Map<string, number>, method: string, by: number) => m.set(method, (m.get(method) ?? 0) + by);

  const server: Http2Server = opts.tls
    ? createSecureServer({
        cert: opts.tls.cert,
        key: opts.tls.key,
        ...(opts.tls.clientCa ? { ca: opts.tls.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
      })
    : createServer();
  server.on('session', (session: Http2Session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    const socket = session.socket as TLSSocket;
    const cn = typeof socket.getPeerCertificate === 'function' ? socket.getPeerCertificate()?.subject?.CN : undefined;
    if (cn) state.clientCertificates.push(Array.isArray(cn) ? cn.join(',') : cn);
  });
  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void onStream(stream, headers));
  const onStream = async (stream: ServerHttp2Stream, headers: IncomingHttpHeaders): Promise<void> => {
    const method = methodOf(headers[':path']);
    bump(seen, method, 1);
    bump(openCalls, method, 1);
    stream.on('close', () => bump(openCalls, method, -1));
    const held = holds.findIndex((h) => h.method === method);
    if (held >= 0) {
      const [h] = holds.splice(held, 1);
      h!.onHeld();
      await h!.gate;
    }
    const authorization = headers.authorization;
    state.authorizations.push(authorization);
    if (opts.apiKey !== undefined && authorization !== `Bearer ${opts.apiKey}`) {
      state.refused++;
      const message = authorization ? 'the API key is not valid' : 'an API key is required (authorization: Bearer <key>)';
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '16', 'grpc-message': encodeURIComponent(message) }, { endStream: true });
      return;
    }
    let trailers: IncomingHttpHeaders | undefined;
    const req = upstreamSession().request(forwardable(headers, (n) => n === ':method' || n === ':path'));
    stream.pipe(req);
    req.on('response', (response) => {
      // A gRPC "trailers-only" answer (an error without a body) carries its status in the headers.
      if (response['grpc-status'] !== undefined) {
        stream.respond(forwardable(response, (n) => n === ':status'), { endStream: true });
        return;
      }
      stream.respond(forwardable(response, (n) => n === ':status'), { waitForTrailers: true });
      req.pipe(stream);
    });
    req.on('trailers', (t) => (trailers = t));
    stream.on('wantTrailers', () => {
      if (trailers) stream.sendTrailers(forwardable(trailers, () => false));
      else stream.close();
    });
    req.on('error', () => {
      if (!stream.closed) stream.close(constants.NGHTTP2_INTERNAL_ERROR);
    });
    stream.on('error', () => undefined);
    stream.on('close', () => {
      if (!req.closed) req.close(constants.NGHTTP2_CANCEL);
    });
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    authorizations: state.authorizations,
    clientCertificates: state.clientCertificates,
    get refused() {
      return state.refused;
    },
    address: `127.0.0.1:${port}`,
    calls: (method) => seen.get(method) ?? 0,
    open: (method) => openCalls.get(method) ?? 0,
    hold(method) {
      let release!: () => void;
      let onHeld!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const held = new Promise<void>((r) => (onHeld = r));
      holds.push({ method, gate, onHeld });
      return { held, release };
    },
    async close() {
      for (const s of sessions) s.destroy();
      upstream?.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
