/** The worker process: `npm run worker`. Configuration comes from the environment (see docs/configuration.md). */
import { loadConfig, RECOMMENDED_MALLOC_ARENA_MAX, REPO_ROOT, temporalConnection } from '../config/env';
import { loadWorkerVersion } from '../config/worker-versioning';
import { hostname } from 'node:os';
import { connectTemporalClient } from '../clients/temporal/connection';
import { becomeCurrentIfNone, describeOutcome } from './deployment-version';
import { loadDhcpSites } from '../config/dhcp-sites';
import { loadPivotPlanes } from '../config/pivot-planes';
import { addressPolicyFromEnv } from '../clients/images/address-policy';
import { readTlsFiles } from '../clients/tls/files';
import { connectTemporalWorker } from '../clients/temporal/native-connection';
import { IronicClient } from '../clients/ironic/client';
import { LocalSecretStore, loadSecretKey } from '../clients/secrets/local-store';
import { createWorker } from './worker';
import { waitForIronic } from './ironic-ready';
import { metalflowDataConverter } from '../clients/temporal/payload-keys';
import { KubernetesSecretReader } from '../clients/secrets/kube-store';
import { startImageCache } from './image-cache';
import { createSiteCacheWorker } from './site-cache-worker';
import { startPowerSentinel, stopPowerSentinel } from './power-sentinel-start';
import { runSiteWorker, siteArgument, siteToServe } from './site-main';
import { loadSites } from '../config/sites';
import { kubernetesMode, peerSettings } from './process-deps';
import { readFileSync } from 'node:fs';
import { startTracing } from '../clients/telemetry/tracing';
import { TRACING_BUNDLE_MARK } from '../clients/temporal/tracing-interceptors';

const config = loadConfig();
// Traces of workflows, activities and their Ironic and BMC requests (docs/observability.md), before any client exists.
const tracing = config.otlpEndpoint ? startTracing({ endpoint: config.otlpEndpoint, serviceName: 'metalflow-worker' }) : undefined;
if (tracing) console.log(`[worker] traces to ${tracing.endpoint}`);
if (tracing && config.workflowBundle && !readFileSync(config.workflowBundle, 'utf8').includes(TRACING_BUNDLE_MARK)) {
  // Without the workflow interceptors the workflow passes no trace on: each activity would start a trace of its own.
  console.warn('[worker] METALFLOW_WORKFLOW_BUNDLE was built without the OpenTelemetry workflow interceptors (TRACED_WORKFLOW_BUNDLE_OPTIONS in workers/worker.ts): activities are not linked to the call that caused them');
}
// `--site NAME`: this process is that site's worker alone (docs/sites.md).
const siteName = siteArgument(process.argv.slice(2));
if (siteName !== undefined) {
  await runSiteWorker(config, siteToServe(loadSites(process.env, config), siteName), tracing);
  await tracing?.shutdown();
  process.exit(0);
}
// Its Worker Deployment Version (docs/operations.md, "Upgrading workers"); undefined with METALFLOW_WORKER_VERSIONING=off.
const version = loadWorkerVersion(process.env, REPO_ROOT);
if (config.workerMetricsPort !== undefined) {
  // The Temporal SDK's own metrics (workflow and activity task latencies, slots, polls, cache), served by its
  // Core runtime: before any connection, which would install the default runtime.
  const { Runtime } = await import('@temporalio/worker');
  const bindAddress = `${config.metricsHost.includes(':') ? `[${config.metricsHost}]` : config.metricsHost}:${config.workerMetricsPort}`;
  Runtime.install({ telemetryOptions: { metrics: { prometheus: { bindAddress, countersTotalSuffix: true, useSecondsForDurations: true } } } });
  console.log(`[worker] Temporal SDK metrics at http://${bindAddress}/metrics`);
}
const dhcpSites = loadDhcpSites(process.env);
// The sites' names only (a fleet operation's selection by site checks them); their endpoints are the site workers'.
const siteRegistry = loadSites(process.env, config);
const sites = siteRegistry.names();
// Read at start, so a mistake in it stops the worker instead of the first pivot.
const pivotPlanes = loadPivotPlanes(process.env);
// Image URLs come from API callers: the worker's own fetches keep off loopback, link-local and its own listeners
// unless METALFLOW_IMAGE_FETCH_ALLOW lets a range through (docs/security.md, *The worker's image fetches*).
const imageFetchPolicy = addressPolicyFromEnv(
  process.env,
  [config.imageCache?.port, config.workerMetricsPort].filter((p): p is number => p !== undefined),
);
const key = loadSecretKey({ key: config.secretKey, keyFile: config.secretKeyFile, createIfMissing: true });
const ironic = new IronicClient({
  url: config.ironicUrl,
  basicAuth: config.ironicBasicAuth,
  ...(config.ironicTls ? { tls: readTlsFiles(config.ironicTls) } : {}),
});
// Fail at start, not at the first host, when Ironic is too old; wait for one that does not answer yet.
await waitForIronic(ironic, { log: (line) => console.warn(`[worker] ${line}`) });
const kubernetes = await kubernetesMode(config.kubeconfig);
// The image cache and its HTTP server (docs/images.md), when METALFLOW_IMAGE_CACHE_DIR is set.
const served = config.imageCache ? await startImageCache(config.imageCache, config.imageCaFile, imageFetchPolicy) : undefined;
const connection = await connectTemporalWorker(temporalConnection(config));
const worker = await createWorker(
  {
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    ironic,
    // In Kubernetes mode Metal3's Secrets are the only source of credentials and user data.
    secrets: kubernetes ? new KubernetesSecretReader(kubernetes) : new LocalSecretStore(config.secretDir, key),
    ...peerSettings(config),
    dhcpSites,
    sites,
    credentialSites: siteRegistry.credentialSites(),
    ...(served ? { imageCache: served.imageCache, configDrives: served.configDrives } : {}),
    kubernetes,
    provisioningLimit: config.provisioningLimit,
    pivotPlanes,
    imageFetchPolicy,
    dataConverter: metalflowDataConverter(config.payloadKeysFile),
    version,
    ...(tracing ? { tracing } : {}),
  },
  {
    ...config.workerTuning,
    // A prebuilt workflow bundle skips bundling at start (tests restart workers often).
    ...(config.workflowBundle ? { workflowBundle: { codePath: config.workflowBundle }, workflowsPath: undefined } : {}),
  },
);
console.log(
  `metalflow worker on task queue ${config.taskQueue} at ${config.temporalAddress}${config.temporalTls ? ' (TLS)' : ''}, Ironic ${config.ironicUrl}` +
    (version ? `, worker deployment version ${version.deploymentName}:${version.buildId}` : ', unversioned (METALFLOW_WORKER_VERSIONING=off)'),
);
if (process.env.MALLOC_ARENA_MAX === undefined) {
  // Only its launcher can set it (glibc reads it at start): said once, so a fleet's worker is not quietly larger.
  console.log(`[worker] MALLOC_ARENA_MAX is unset: glibc keeps more memory at rest (~50 MiB at 1,000 hosts); ${RECOMMENDED_MALLOC_ARENA_MAX} is recommended (docs/configuration.md)`);
}
if (config.powerSentinelSeconds > 0) {
  const id = await startPowerSentinel({
    connection: temporalConnection(config),
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    intervalSeconds: config.powerSentinelSeconds,
    dataConverter: metalflowDataConverter(config.payloadKeysFile),
  });
  console.log(`[worker] power sentinel ${id}: Ironic's nodes listed every ${config.powerSentinelSeconds} s`);
} else if (await stopPowerSentinel({ connection: temporalConnection(config), namespace: config.temporalNamespace, taskQueue: config.taskQueue })) {
  console.log('[worker] power sentinel cancelled (METALFLOW_POWER_SENTINEL_SECONDS=0)');
}
// A site's cache worker also takes its site's cache requests (docs/images.md, *The cache per site*).
const site = config.imageCache?.site;
const siteWorker =
  site && served
    ? await createSiteCacheWorker({
        connection,
        namespace: config.temporalNamespace,
        taskQueue: config.taskQueue,
        site,
        cache: served.imageCache,
        fetchPolicy: imageFetchPolicy,
        ...(config.imageCaFile ? { imageCa: readTlsFiles({ caFile: config.imageCaFile }).ca } : {}),
        dataConverter: metalflowDataConverter(config.payloadKeysFile),
      })
    : undefined;
if (siteWorker) console.log(`[worker] image cache of site ${site ?? ''} at ${served?.imageCache.baseUrl ?? ''}`);
// A first install's version becomes current once it is registered, which takes the worker's first polls.
const currentVersion = version
  ? (async () => {
      const client = await connectTemporalClient(temporalConnection(config));
      try {
        const outcome = await becomeCurrentIfNone({ connection: client, namespace: config.temporalNamespace, version, identity: `${process.pid}@${hostname()}` });
        console.log(`[worker] ${describeOutcome(version, outcome)}`);
      } catch (err) {
        worker.shutdown();
        siteWorker?.shutdown();
        throw err;
      } finally {
        await client.close();
      }
    })()
  : undefined;
await Promise.all([worker.run(), siteWorker?.run(), currentVersion]);
await connection.close();
await tracing?.shutdown();
// The workers have stopped (SIGTERM, SIGINT): what the process still serves (the image cache) would keep it alive.
process.exit(0);
