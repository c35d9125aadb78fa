/**
 * How metalflow's processes connect to Temporal: one builder of the SDK's
 * connection options (TLS with a CA bundle, mutual TLS, an API key) shared by
 * the client's `Connection` (API, controller, bench) and the worker's
 * `NativeConnection` (native-connection.ts), and a connect that says why it
 * failed instead of the SDK's "Failed to connect before the deadline".
 */
import { Connection, type TLSConfig } from '@temporalio/client';
import { readTlsFiles, type TlsFiles } from '../tls/files';
import { temporalConnectFailure } from './connect-failure';

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

/** What both `Connection.connect` and `NativeConnection.connect` take. */
export interface TemporalConnectionOptions {
  address: string;
  /** Always explicit: the SDK would turn TLS on by itself for an API key. */
  tls: TLSConfig | false;
  apiKey?: string;
}

export function temporalConnectionOptions(settings: TemporalConnectionSettings): TemporalConnectionOptions {
  const apiKey = settings.apiKey ? { apiKey: settings.apiKey } : {};
  if (!settings.tls) return { address: settings.address, tls: false, ...apiKey };
  const pem = readTlsFiles(settings.tls);
  const tls: TLSConfig = {
    ...(pem.ca ? { serverRootCACertificate: pem.ca } : {}),
    ...(pem.cert && pem.key ? { clientCertPair: { crt: pem.cert, key: pem.key } } : {}),
    ...(settings.tls.serverName ? { serverNameOverride: settings.tls.serverName } : {}),
  };
  return { address: settings.address, tls, ...apiKey };
}

/** A client connection (API, controller, bench), failing with the reason when Temporal cannot be reached. */
export async function connectTemporalClient(settings: TemporalConnectionSettings): Promise<Connection> {
  try {
    return await Connection.connect(temporalConnectionOptions(settings));
  } catch (err) {
    throw await temporalConnectFailure(settings, err);
  }
}
