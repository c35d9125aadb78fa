/**
 * The API's security settings, read from the environment (see docs/security.md,
 * *API authentication and roles*). Without a token file the API will not start, unless
 * METALFLOW_API_AUTH=none and it listens on loopback only.
 */
import { readFileSync } from 'node:fs';
import { TokenFile } from './token-file';
import type { AuditSink } from './audit';
import type { TokenReviewer } from './token-review';

export interface ApiTls {
  key: Buffer;
  cert: Buffer;
  /** With a CA, clients may present a certificate; its CN is looked up in the token file (x509:<CN>). */
  ca?: Buffer;
}

export interface AuthOptions {
  /** undefined with METALFLOW_API_AUTH=none (every caller is admin everywhere) or with Kubernetes only. */
  tokens: TokenFile | undefined;
  /** Kubernetes TokenReview for tokens the file does not know. */
  kube?: TokenReviewer;
  /** Host header names accepted (without port); lower case. */
  allowedHosts: string[];
  /** Origins accepted when a request carries Origin (scheme://host[:port]). */
  allowedOrigins: string[];
  audit: AuditSink;
  tls?: ApiTls;
}

const LOOPBACK = ['127.0.0.1', 'localhost', '::1', '[::1]'];

export function isLoopback(host: string): boolean {
  return LOOPBACK.includes(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

const list = (v: string | undefined): string[] =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export function defaultHosts(listenHost: string): string[] {
  const bracketed = listenHost.includes(':') && !listenHost.startsWith('[') ? `[${listenHost}]` : listenHost;
  return [...new Set([listenHost, bracketed, ...LOOPBACK].map((h) => h.toLowerCase()))];
}

export function loadAuthOptions(env: NodeJS.ProcessEnv, listenHost: string, audit: AuditSink, kube?: TokenReviewer): AuthOptions {
  const mode = env.METALFLOW_API_AUTH ?? 'tokens';
  if (mode !== 'tokens' && mode !== 'none') throw new Error(`METALFLOW_API_AUTH must be "tokens" or "none", got "${mode}"`);
  let tokens: TokenFile | undefined;
  if (mode === 'none') {
    if (!isLoopback(listenHost)) {
      throw new Error(`METALFLOW_API_AUTH=none is allowed only on a loopback address; METALFLOW_API_HOST is ${listenHost}`);
    }
  } else {
    const file = env.METALFLOW_API_TOKENS_FILE;
    if (!file && !kube) {
      throw new Error('METALFLOW_API_TOKENS_FILE is not set: the API needs a token file, METALFLOW_API_KUBE_ROLES, or METALFLOW_API_AUTH=none on loopback');
    }
    if (file) tokens = TokenFile.load(file);
  }
  const cert = env.METALFLOW_API_TLS_CERT_FILE;
  const key = env.METALFLOW_API_TLS_KEY_FILE;
  const ca = env.METALFLOW_API_TLS_CLIENT_CA_FILE;
  if (Boolean(cert) !== Boolean(key)) throw new Error('METALFLOW_API_TLS_CERT_FILE and METALFLOW_API_TLS_KEY_FILE go together');
  if (ca && !cert) throw new Error('METALFLOW_API_TLS_CLIENT_CA_FILE needs METALFLOW_API_TLS_CERT_FILE and METALFLOW_API_TLS_KEY_FILE');
  const hosts = list(env.METALFLOW_API_ALLOWED_HOSTS).map((h) => h.toLowerCase());
  return {
    tokens,
    kube: mode === 'none' ? undefined : kube,
    allowedHosts: hosts.length > 0 ? hosts : defaultHosts(listenHost),
    allowedOrigins: list(env.METALFLOW_API_ALLOWED_ORIGINS),
    audit,
    tls: cert && key ? { cert: readFileSync(cert), key: readFileSync(key), ca: ca ? readFileSync(ca) : undefined } : undefined,
  };
}
