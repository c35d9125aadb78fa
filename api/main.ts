/** The API process: `npm run api`. Configuration comes from the environment (see README). */
import { Client, Connection } from '@temporalio/client';
import { metalflowDataConverter } from '../clients/temporal/payload-keys';
import { loadConfig } from '../config/env';
import { LocalSecretStore, loadSecretKey } from '../clients/secrets/local-store';
import { HostService } from './host-service';
import { buildServer } from './server';

const config = loadConfig();
const key = loadSecretKey({ key: config.secretKey, keyFile: config.secretKeyFile, createIfMissing: true });
const connection = await Connection.connect({ address: config.temporalAddress });
const client = new Client({ connection, namespace: config.temporalNamespace, dataConverter: metalflowDataConverter(config.payloadKeysFile) });
const hosts = new HostService({
  client,
  secrets: new LocalSecretStore(config.secretDir, key),
  taskQueue: config.taskQueue,
  hostOptions: config.hostOptions,
  updateTimeoutMs: config.apiUpdateTimeoutSeconds * 1000,
});
const app = await buildServer(hosts, { logger: true });
await app.listen({ host: config.apiHost, port: config.apiPort });
console.log(`metalflow API on http://${config.apiHost}:${config.apiPort} (OpenAPI at /openapi.json)`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void app.close().then(() => connection.close()).then(() => process.exit(0));
  });
}
