/**
 * What went wrong in a TLS handshake, read from a Node/undici error: the
 * OpenSSL reason in a few words and its code, and whether the peer does not
 * speak TLS at all (a plain HTTP port). Shared by the Redfish, Ironic and
 * Temporal clients so each can say which setting fixes it.
 */

const TLS_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'CERT_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'INVALID_CA',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'EPROTO',
]);

/** Verification failures: the peer's certificate is not signed by a CA the client trusts. */
const UNTRUSTED_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'INVALID_CA',
]);

export interface TlsFailure {
  /** Node's or OpenSSL's code, e.g. SELF_SIGNED_CERT_IN_CHAIN; `TLS error` when there is none. */
  code: string;
  /** The reason in a few words, e.g. "self-signed certificate in certificate chain". */
  reason: string;
  /** The port answered, but not with TLS (e.g. "wrong version number"): a plain HTTP server. */
  notTls: boolean;
  /** The certificate is valid but signed by a CA the client was not given. */
  untrusted: boolean;
  /** The server asked for a client certificate and none (or one it refused) was sent. */
  clientCertificateRefused: boolean;
}

/** The TLS failure in `err` (or its cause), or undefined when it is not one. */
export function tlsFailure(err: unknown): TlsFailure | undefined {
  const e = (err ?? {}) as { code?: unknown; message?: unknown; cause?: unknown };
  const cause = (e.cause ?? {}) as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : typeof cause.code === 'string' ? cause.code : '';
  const message = [e.message, cause.message].filter((m): m is string => typeof m === 'string').join(' ') || String(err);
  const isTls = TLS_CODES.has(code) || code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || /SSL routines|certificate/i.test(message);
  if (!isTls) return undefined;
  // OpenSSL messages look like "8070...:error:0A00010B:SSL routines:ssl3_get_record:wrong version number:../deps/..."
  const reason = /SSL routines:[^:]*:([^:]+)/.exec(message)?.[1] ?? message.replace(/\s+/g, ' ').trim();
  return {
    code: code || 'TLS error',
    reason,
    notTls: /wrong version number|packet length too long|WRONG_VERSION_NUMBER/i.test(message + code),
    untrusted: UNTRUSTED_CODES.has(code),
    clientCertificateRefused: /certificate required|alert (number )?116|bad certificate|unknown ca|TLSV13_ALERT_CERTIFICATE_REQUIRED|SSLV3_ALERT_BAD_CERTIFICATE|TLSV1_ALERT_UNKNOWN_CA/i.test(message + code),
  };
}
