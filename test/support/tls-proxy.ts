/**
 * A TLS-terminating TCP proxy that requires a client certificate, as the
 * reverse proxy in front of an Ironic with mutual TLS does (Ironic's own API
 * server has TLS but cannot ask for client certificates). Every accepted
 * connection is passed to the upstream over TLS, verified with its CA.
 */
import { createServer, connect, type TLSSocket } from 'node:tls';
import type { AddressInfo } from 'node:net';

export interface TlsProxyOptions {
  cert: Buffer;
  key: Buffer;
  /** Client certificates must be signed by this CA. */
  clientCa: Buffer;
  upstream: { host: string; port: number; ca: Buffer };
}

export interface TlsProxy {
  port: number;
  /** CN of every client certificate accepted. */
  clientCertificates: string[];
  close(): Promise<void>;
}

export async function startTlsProxy(opts: TlsProxyOptions): Promise<TlsProxy> {
  const clientCertificates: string[] = [];
  const sockets = new Set<TLSSocket>();
  const server = createServer({ cert: opts.cert, key: opts.key, ca: opts.clientCa, requestCert: true, rejectUnauthorized: true }, (client) => {
    const cn = client.getPeerCertificate()?.subject?.CN;
    if (cn) clientCertificates.push(Array.isArray(cn) ? cn.join(',') : cn);
    const upstream = connect({ host: opts.upstream.host, port: opts.upstream.port, ca: opts.upstream.ca });
    sockets.add(client);
    sockets.add(upstream);
    for (const s of [client, upstream]) {
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    clientCertificates,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
