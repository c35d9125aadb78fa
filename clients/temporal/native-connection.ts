/**
 * The worker's connection to Temporal, with the same options as every client
 * (connection.ts). Kept apart so the API and the controller never load the
 * worker package.
 */
import { NativeConnection } from '@temporalio/worker';
import { temporalConnectionOptions, type TemporalConnectionSettings } from './connection';
import { temporalConnectFailure } from './connect-failure';

export async function connectTemporalWorker(settings: TemporalConnectionSettings): Promise<NativeConnection> {
  try {
    return await NativeConnection.connect(temporalConnectionOptions(settings));
  } catch (err) {
    throw await temporalConnectFailure(settings, err);
  }
}
