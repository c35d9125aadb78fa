/**
 * How metalflow's processes connect to Temporal: one builder of the SDK's
 * connection options (TLS with a CA bundle, mutual TLS, an API key) shared by
 * the client's `Connection` (API, controller, bench) and the worker's
 * `NativeConnection` (native-connection.ts), and a connect that says why it
 * failed instead of the SDK's "Failed to connect before the deadline".
 */
import { Connection, type TLSConfig } from '@temporalio/client';
import { readTlsFiles } from '../tls/files';
import { temporalConnectFailure } from './connect-failure';
import type { TemporalConnectionSettings } from './connection-settings';

export type { TemporalConnectionSettings, TemporalTls } from './connection-settings';


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
