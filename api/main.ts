/** The API process: `npm run api`. Configuration comes from the environment (see docs/configuration.md). */
import { Client } from '@temporalio/client';
import { metalflowDataConverter } from '../clients/temporal/payload-keys';
import { loadConfig, temporalConnection } from '../config/env';
import { connectTemporalClient } from '../clients/temporal/connection';
import { LocalSecretStore, loadSecretKey } from '../clients/secrets/local-store';
import { HostService } from './host-service';
import { buildServer } from './server';
import { loadAuthOptions } from './auth/options';
import { reloadTokensOnChange } from './auth/token-reload';
import { auditSink } from './auth/audit';
import { parseKubeRoles, TokenReviewer } from './auth/token-review';
import { loadKubeConfig } from '../clients/kubernetes/kube-config';
import { loadPivotPlanes } from '../config/pivot-planes';
import { loadSites } from '../config/sites';
import { startTracing } from '../clients/telemetry/tracing';
import { tracingClientInterceptors } from '../clients/temporal/tracing-interceptors';
import { SiteHealthReader } from '../control/site-health';
import { serveMetrics } from '../clients/prometheus/metrics-server';
import { siteMetricsRegistry } from './site-metrics';
import { IronicClient } from '../clients/ironic/client';
import { readTlsFiles } from '../clients/tls/files';
import { DEFAULT_SITE, type Site } from '../model/site';

const config = loadConfig();
// A span per request, carried into the workflows it starts or updates (docs/observability.md).
const tracing = config.otlpEndpoint ? startTracing({ endpoint: config.otlpEndpoint, serviceName: 'metalflow-api' }) : undefined;
if (tracing) console.log(`[api] traces to ${tracing.endpoint}`);
// Before connecting anywhere: no token source (and no explicit METALFLOW_API_AUTH=none on loopback) is a refusal to start.
const auth = loadAuthOptions(process.env, config.apiHost, auditSink(process.env.METALFLOW_API_AUDIT_LOG || undefined), await kubeReviewer());

/** With METALFLOW_API_KUBE_ROLES, Kubernetes tokens are reviewed by the API server of the kubeconfig or the pod. */
async function kubeReviewer(): Promise<TokenReviewer | undefined> {
  const roles = process.env.METALFLOW_API_KUBE_ROLES;
  if (!roles) return undefined;
  const mappings = parseKubeRoles(roles);
  const { KubeConfig } = await import('@kubernetes/client-node');
  const { KubeRest } = await import('../clients/kubernetes/kube-rest');
  const kc = new KubeConfig();
  if (!loadKubeConfig(kc, config.kubeconfig)) {
    throw new Error('METALFLOW_API_KUBE_ROLES needs METALFLOW_KUBECONFIG or an in-cluster service account');
  }
  return new TokenReviewer(await KubeRest.create(kc), mappings);
}
/**
 * The client `GET /v1/sites` asks whether a site's Ironic answers with: its API root, which Ironic serves without
 * credentials. A site's CA is used when this process can read it (else the system's); its password never is.
 */
function siteIronic(site: Site): IronicClient {
  if (site.name === DEFAULT_SITE) return new IronicClient({ url: config.ironicUrl, requestTimeoutMs: 3000, ...(config.ironicTls ? { tls: readTlsFiles(config.ironicTls) } : {}) });
  const ca = site.ironic.caFile;
  let tls;
  try {
    tls = ca ? readTlsFiles({ caFile: ca }) : undefined;
  } catch {
    tls = undefined;
  }
  return new IronicClient({ url: site.ironic.url, requestTimeoutMs: 3000, ...(tls ? { tls } : {}) });
}
// Read at start: a mistake in the file stops the API, and `spec.site` is checked against it.
const sites = loadSites(process.env, config);
const key = loadSecretKey({ key: config.secretKey, keyFile: config.secretKeyFile, createIfMissing: true });
const connection = await connectTemporalClient(temporalConnection(config));
const client = new Client({
  connection,
  namespace: config.temporalNamespace,
  dataConverter: metalflowDataConverter(config.payloadKeysFile),
  ...(tracing ? { interceptors: tracingClientInterceptors(tracing) } : {}),
});
const hosts = new HostService({
  client,
  secrets: new LocalSecretStore(config.secretDir, key),
  taskQueue: config.taskQueue,
  hostOptions: config.hostOptions,
  sites: sites.names(),
  credentialSites: sites.credentialSites(),
  updateTimeoutMs: config.apiUpdateTimeoutSeconds * 1000,
});
// The planes a pivot may name: unknown ids are refused here, before the worker (which checks them again) sees them.
const page = { temporalUi: { url: config.temporalUiUrl, namespace: config.temporalNamespace }, sites: sites.sites.map((s) => ({ name: s.name, taskQueue: s.taskQueue })) };
const siteHealth = new SiteHealthReader(client, sites.sites.map((s) => ({ name: s.name, taskQueue: s.taskQueue, credentials: s.secrets ?? 'central', ironic: siteIronic(s) })));
const app = await buildServer(hosts, { logger: true, auth, pivotPlanes: loadPivotPlanes(process.env), page, sites: siteHealth, ...(tracing ? { tracing } : {}) });
const metrics = config.apiMetricsPort !== undefined ? await serveMetrics(siteMetricsRegistry(siteHealth), { host: config.metricsHost, port: config.apiMetricsPort }) : undefined;
if (metrics) console.log(`metalflow API metrics on ${metrics.url}`);
if (auth.tokens && process.env.METALFLOW_API_TOKENS_FILE) reloadTokensOnChange(auth.tokens, process.env.METALFLOW_API_TOKENS_FILE, app.log);
await app.listen({ host: config.apiHost, port: config.apiPort });
console.log(`metalflow API on ${auth.tls ? 'https' : 'http'}://${config.apiHost}:${config.apiPort} (OpenAPI at /openapi.json, fleet page at /fleet)`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void app
      .close()
      .then(() => connection.close())
      .then(() => tracing?.shutdown())
      .then(() => process.exit(0));
    void app.close().then(() => metrics?.close()).then(() => connection.close()).then(() => process.exit(0));
  });
}
