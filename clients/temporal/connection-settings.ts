/** Where and how to reach Temporal, as configured (config/tls.ts reads it from the environment). */
import type { TlsFiles } from '../tls/files';

export interface TemporalTls extends TlsFiles {
  /** The name the server's certificate is checked against (and SNI), when it is not the address's host. */
  serverName?: string;
}

export interface TemporalConnectionSettings {
  /** `host:port` of the Temporal frontend. */
  address: string;
  /** Undefined: plain gRPC. An empty object: TLS verified against the system's CAs. */
  tls?: TemporalTls;
  /** Sent as `authorization: Bearer <key>` on every call. */
  apiKey?: string;
}
