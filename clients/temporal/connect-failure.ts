/**
 * Why a connection to Temporal failed, in words an operator can act on. The
 * SDK's own errors say little about TLS (the client's is "Failed to connect
 * before the deadline" after 10 s), so on failure a probe (../tls/probe.ts)
 * repeats the handshake with the same files and sends the HTTP/2 preface:
 * an untrusted certificate, a name mismatch, a client certificate the server
 * wants or refuses, a server that does not speak TLS, or one that does while
 * the client does not.
 */
import { readTlsFiles } from '../tls/files';
import { looksLikeTls, probePlain, probeTls, type ProbeResult } from '../tls/probe';
import type { TemporalConnectionSettings } from './connection-settings';

export class TemporalConnectError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TemporalConnectError';
  }
}

/** The HTTP/2 client preface and an empty SETTINGS frame: an HTTP/2 server answers with its own SETTINGS. */
const H2_HELLO = Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]);
const REFUSED = 'connection refused: nothing listens there';
const SET_TLS = 'set TEMPORAL_TLS=true (and TEMPORAL_TLS_SERVER_CA_CERT_PATH for a private CA)';

function hostAndPort(address: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(address) ?? /^([^:]+):(\d+)$/.exec(address);
  return m ? { host: m[1]!, port: Number(m[2]) } : { host: address, port: 7233 };
}

function overTls(settings: TemporalConnectionSettings, host: string, result: ProbeResult): string | undefined {
  const tls = settings.tls ?? {};
  if (result.kind === 'refused') return REFUSED;
  if (result.kind === 'closed') {
    // A TLS 1.3 server that refuses a client certificate may just close the connection.
    return tls.certFile
      ? `the server closed the connection after the TLS handshake without answering: it most likely refused the client certificate ${tls.certFile} (is it signed by a CA the server trusts?)`
      : undefined;
  }
  if (result.kind !== 'tls') return undefined;
  const { failure } = result;
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

function withoutTls(result: ProbeResult): string | undefined {
  if (result.kind === 'refused') return REFUSED;
  if (result.kind === 'answered') return looksLikeTls(result.first) ? `the server speaks TLS and this process does not: ${SET_TLS}` : undefined;
  if (result.kind === 'closed') return `the server closed the connection without answering the HTTP/2 preface; if it expects TLS, ${SET_TLS}`;
  return undefined;
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
  let reason: string | undefined;
  try {
    reason = settings.tls
      ? overTls(settings, host, await probeTls({ host, port, serverName: settings.tls.serverName, alpn: ['h2'], hello: H2_HELLO }, readTlsFiles(settings.tls)))
      : withoutTls(await probePlain({ host, port, hello: H2_HELLO }));
  } catch {
    // the probe only adds words; the SDK's error stands on its own
  }
  const message = `cannot connect to Temporal at ${settings.address} ${how(settings)}: ${reason ? `${reason} (the SDK said: ${sdk})` : sdk}`;
  return new TemporalConnectError(message, { cause: err });
}
