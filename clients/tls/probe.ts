/**
 * One probe connection that finds out why a client could not talk to a TLS
 * server, for errors that SDKs and HTTP clients report only as "connect
 * failed" or "other side closed". It repeats the handshake with Node's TLS and
 * the same files, sends a first message (TLS 1.3 servers refuse a client
 * certificate only after the handshake), and reports what the server did.
 * Used after a failure only, never on the happy path.
 */
import { connect as tcpConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { TlsMaterial } from './files';
import { tlsFailure, type TlsFailure } from './tls-error';

export type ProbeResult =
  /** The handshake (or what followed) failed for a TLS reason. */
  | { kind: 'tls'; failure: TlsFailure }
  /** The server closed the connection after the handshake without answering: typically a refused client certificate. */
  | { kind: 'closed' }
  /** The server answered: TLS is not the problem. */
  | { kind: 'answered'; first: Buffer }
  | { kind: 'refused' }
  /** Anything else (timeout, reset, DNS): nothing to add. */
  | { kind: 'unknown' };

const PROBE_MS = 5_000;

/** Settles once with the first of: an answer, an error, the peer closing, or the probe's time running out. */
function settle(socket: Socket, onError: (err: Error) => ProbeResult): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const done = (value: ProbeResult): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    const timer = setTimeout(() => done({ kind: 'unknown' }), PROBE_MS);
    socket.once('data', (first: Buffer) => done({ kind: 'answered', first }));
    socket.once('error', (err) => done(onError(err)));
    socket.once('close', () => done({ kind: 'closed' }));
  });
}

const refusedOr = (err: Error, otherwise: ProbeResult): ProbeResult => ((err as { code?: string }).code === 'ECONNREFUSED' ? { kind: 'refused' } : otherwise);

export interface TlsProbeTarget {
  host: string;
  port: number;
  /** The name the certificate is checked against, when it is not `host`. */
  serverName?: string;
  alpn?: string[];
  /** What to send once connected: a request the server answers. */
  hello: Buffer;
}

export function probeTls(target: TlsProbeTarget, pem: TlsMaterial): Promise<ProbeResult> {
  const socket = tlsConnect({
    host: target.host,
    port: target.port,
    // An IP address is checked against the certificate's IP names; SNI carries host names only.
    ...(target.serverName ? { servername: target.serverName } : isIP(target.host) ? {} : { servername: target.host }),
    ...(pem.ca ? { ca: pem.ca } : {}),
    ...(pem.cert && pem.key ? { cert: pem.cert, key: pem.key } : {}),
    ...(target.alpn ? { ALPNProtocols: target.alpn } : {}),
  });
  socket.once('secureConnect', () => socket.write(target.hello));
  return settle(socket, (err) => {
    const failure = tlsFailure(err);
    return failure ? { kind: 'tls', failure } : refusedOr(err, { kind: 'unknown' });
  });
}

/** A plain TCP connection sending `hello`: does the server answer in TLS (or close) instead? */
export function probePlain(target: Omit<TlsProbeTarget, 'serverName' | 'alpn'>): Promise<ProbeResult> {
  const socket = tcpConnect({ host: target.host, port: target.port });
  socket.once('connect', () => socket.write(target.hello));
  return settle(socket, (err) => refusedOr(err, { kind: 'unknown' }));
}

/** 0x15 / 0x16: the first byte of a TLS alert or handshake record. */
export const looksLikeTls = (first: Buffer): boolean => first[0] === 0x15 || first[0] === 0x16;
