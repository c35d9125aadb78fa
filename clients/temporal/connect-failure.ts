/**
 * Why a connection to Temporal failed, in words an operator can act on. The
 * SDK's own errors say little about TLS (the client's is "Failed to connect
 * before the deadline" after 10 s), so on failure one probe connection
 * repeats the handshake with Node's TLS and the same files, sends the HTTP/2
 * preface, and reads what the server does: an untrusted certificate, a name
 * mismatch, a client certificate the server wants or refuses, a server that
 * does not speak TLS, or one that does while the client does not.
 */
import { readFileSync } from 'node:fs';
import { connect as tcpConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { tlsFailure } from '../tls/tls-error';
import type { TemporalConnectionSettings } from './connection';

export class TemporalConnectError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TemporalConnectError';
  }
}

/** The HTTP/2 client preface and an empty SETTINGS frame: an HTTP/2 server answers with its own SETTINGS. */
const H2_HELLO = Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]);
const PROBE_MS = 5_000;

function hostAndPort(address: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(address) ?? /^([^:]+):(\d+)$/.exec(address);
  return m ? { host: m[1]!, port: Number(m[2]) } : { host: address, port: 7233 };
}

/** Settles once with the first of: an answer, an error, the peer closing, or the probe's time running out. */
function probe(socket: Socket, onData: (first: Buffer) => string | undefined, onError: (err: Error) => string | undefined, onClose: () => string | undefined): Promise<string | undefined> {
  return new Promise((resolve) => {
    const done = (value: string | undefined): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    const timer = setTimeout(() => done(undefined), PROBE_MS);
    socket.once('data', (d: Buffer) => done(onData(d)));
    socket.once('error', (err) => done(onError(err)));
    socket.once('close', () => done(onClose()));
  });
}

function tlsReason(settings: TemporalConnectionSettings, host: string, err: Error): string | undefined {
  const tls = settings.tls ?? {};
  const failure = tlsFailure(err);
  if (!failure) return (err as { code?: string }).code === 'ECONNREFUSED' ? 'connection refused: nothing listens there' : undefined;
  const said = `${failure.reason} (${failure.code})`;
  if (failure.notTls) return `the server does not speak TLS (${said}): connect without TLS (unset TEMPORAL_TLS and the TEMPORAL_TLS_* files) or use its TLS port`;
  if (failure.clientCertificateRefused) {
    return tls.certFile
      ? `the server refused the client certificate ${tls.certFile} (${said}): it must be signed by a CA the server trusts`
      : `the server requires a client certificate (mutual TLS; ${said}): set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH`;
  }
  if (failure.untrusted) {
    return tls.caFile
      ? `the server's certificate is not signed by the CA in ${tls.caFile} (${said})`
      : `the server's certificate is not signed by a CA this process trusts (${said}): set TEMPORAL_TLS_SERVER_CA_CERT_PATH to the CA bundle that signed it`;
  }
  if (/HOSTNAME_MISMATCH|ALTNAME/.test(failure.code)) {
    return `the server's certificate is not for ${tls.serverName ?? host} (${said}): set TEMPORAL_TLS_SERVER_NAME to a name it carries`;
  }
  return `the TLS handshake failed: ${said}`;
}

/** What a TLS handshake with the configured files tells, or undefined when TLS is not the problem. */
function probeTls(settings: TemporalConnectionSettings, host: string, port: number): Promise<string | undefined> {
  const tls = settings.tls ?? {};
  let socket: Socket;
  try {
    socket = tlsConnect({
      host,
      port,
      // An IP address is checked against the certificate's IP names; SNI carries host names only.
      ...(tls.serverName ? { servername: tls.serverName } : isIP(host) ? {} : { servername: host }),
      ...(tls.caFile ? { ca: readFileSync(tls.caFile) } : {}),
      ...(tls.certFile && tls.keyFile ? { cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) } : {}),
      ALPNProtocols: ['h2'],
    });
  } catch (err) {
    return Promise.resolve(err instanceof Error ? err.message : String(err));
  }
  // TLS 1.3 servers refuse a client certificate after the handshake: send the preface and wait for their answer.
  socket.once('secureConnect', () => socket.write(H2_HELLO));
  return probe(
    socket,
    () => undefined,
    (err) => tlsReason(settings, host, err),
    // A TLS 1.3 server that refuses a client certificate may just close the connection.
    () => (tls.certFile ? `the server closed the connection after the TLS handshake without answering: it most likely refused the client certificate ${tls.certFile} (is it signed by a CA the server trusts?)` : undefined),
  );
}

/** Whether a server answering plain HTTP/2 with TLS (or closing) is the problem. */
function probePlain(host: string, port: number): Promise<string | undefined> {
  const socket = tcpConnect({ host, port });
  socket.once('connect', () => socket.write(H2_HELLO));
  const speaksTls = 'the server speaks TLS and this process does not: set TEMPORAL_TLS=true (and TEMPORAL_TLS_SERVER_CA_CERT_PATH for a private CA)';
  return probe(
    socket,
    // 0x15 / 0x16: a TLS alert or handshake record.
    (first) => (first[0] === 0x15 || first[0] === 0x16 ? speaksTls : undefined),
    (err) => ((err as { code?: string }).code === 'ECONNREFUSED' ? 'connection refused: nothing listens there' : undefined),
    () => `the server closed the connection without answering the HTTP/2 preface; if it expects TLS, ${speaksTls.replace('the server speaks TLS and this process does not: ', '')}`,
  );
}

function how(settings: TemporalConnectionSettings): string {
  const parts: string[] = [];
  if (!settings.tls) parts.push('without TLS');
  else {
    parts.push(settings.tls.caFile ? `over TLS trusting ${settings.tls.caFile}` : "over TLS trusting the system's CAs");
    if (settings.tls.certFile) parts.push(`with client certificate ${settings.tls.certFile}`);
  }
  if (settings.apiKey) parts.push('with an API key');
  return parts.join(' ');
}

/** The error to throw for `err` from the SDK's connect: what was tried, and why it failed when a probe can tell. */
export async function temporalConnectFailure(settings: TemporalConnectionSettings, err: unknown): Promise<TemporalConnectError> {
  const sdk = err instanceof Error ? err.message : String(err);
  const { host, port } = hostAndPort(settings.address);
  const reason = settings.tls ? await probeTls(settings, host, port) : await probePlain(host, port);
  const message = `cannot connect to Temporal at ${settings.address} ${how(settings)}: ${reason ? `${reason} (the SDK said: ${sdk})` : sdk}`;
  return new TemporalConnectError(message, { cause: err });
}
