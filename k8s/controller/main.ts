/**
 * The Kubernetes shim: watches BareMetalHosts and hands them to their host
 * workflows. Run it with METALFLOW_KUBECONFIG (or in-cluster) and the same
 * Temporal settings as the worker. Only the lease holder drives hosts.
 */
import { loadSites } from '../../config/sites';
import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import { metalflowDataConverter } from '../../clients/temporal/payload-keys';
import { KubeConfig } from '@kubernetes/client-node';
import { Client } from '@temporalio/client';
import { loadConfig, temporalConnection } from '../../config/env';
import { connectTemporalClient } from '../../clients/temporal/connection';
import { KubeRest } from '../../clients/kubernetes/kube-rest';
import { loadKubeConfig } from '../../clients/kubernetes/kube-config';
import { Informer, watchPaths, type KubeObject } from './informer';
import { updatePoliciesPath, type HostUpdatePolicyObject } from './update-policies';
import { LeaderElector } from './leader';
import { bmhPath, Reconciler, type BareMetalHost } from './reconciler';
import { WorkQueue } from './work-queue';
import { scanEndedWorkflows } from './ended-scan';
import { objectFacts, scanStaleStatus } from './status-scan';
import { ControllerMetrics } from './metrics';
import { credentialsName, hostFacts } from './metric-facts';
import { serveMetrics } from '../../clients/prometheus/metrics-server';
import { RemediationController } from './remediations';
import { IpamController } from './ipam';
import { HealthCheck } from './health-check';
import { Capm3RemediationBridge } from './capm3-remediations';
import { NodeHealthReporter } from './node-health';
import { readSiteNodeHealth } from '../../control/node-health';
import { DEFAULT_SITE_WATCH_SECONDS, SITE_LABEL } from '../../model/site';
import { IronicClient } from '../../clients/ironic/client';
import { readTlsFiles } from '../../clients/tls/files';
import { FirmwareSettingsController } from './firmware-settings';
import { BmoGuard } from './bmo-guard';
import { temporalCallCounter } from './temporal-calls';
import { withReconcileSignal } from './reconcile-signal';
import { inSpan, startTracing } from '../../clients/telemetry/tracing';
import { tracingClientInterceptors } from '../../clients/temporal/tracing-interceptors';

const config = loadConfig();
// Spans of the controller's Temporal calls, carried into the workflows they start or update (docs/observability.md).
const tracing = config.otlpEndpoint ? startTracing({ endpoint: config.otlpEndpoint, serviceName: 'metalflow-controller' }) : undefined;
if (tracing) console.log(`[controller] traces to ${tracing.endpoint}`);
// Read at start: a mistake in the file stops the controller; each host's site label is checked against it.
const siteRegistry = loadSites(process.env, config);
const siteNames = siteRegistry.names();
// Sites holding their hosts' BMC credentials themselves: the controller looks for no Secret of their hosts.
const credentialSites = siteRegistry.credentialSites();
const log = (m: string): void => console.log(`[controller] ${m}`);
const kc = new KubeConfig();
if (!loadKubeConfig(kc, config.kubeconfig)) {
  throw new Error('no Kubernetes API: set METALFLOW_KUBECONFIG, or run in a pod with a service account (KUBERNETES_SERVICE_HOST/PORT and its token file)');
}
const rest = await KubeRest.create(kc);
const connection = await connectTemporalClient(temporalConnection(config));
const metrics = new ControllerMetrics();
const client = new Client({
  connection,
  namespace: config.temporalNamespace,
  dataConverter: metalflowDataConverter(config.payloadKeysFile),
  interceptors: { workflow: [...(tracing ? tracingClientInterceptors(tracing).workflow : []), temporalCallCounter(metrics.registry).interceptor] },
});

const settings = config.controller;
const identity = settings.id ?? `${hostname()}-${process.pid}`;
const elector = await LeaderElector.connect(kc, {
  namespace: settings.leaseNamespace,
  name: 'metalflow-controller',
  identity,
  leaseSeconds: settings.leaseSeconds,
});
let informer: Informer<BareMetalHost> | undefined;
let secrets: Informer<KubeObject> | undefined;
let updatePolicies: Informer<HostUpdatePolicyObject> | undefined;
const watchNamespaces = settings.watchNamespaces;
let queue: WorkQueue | undefined;
let stopScan: (() => void) | undefined;
if (settings.metricsPort !== undefined) {
  const served = await serveMetrics(metrics.registry, { host: config.metricsHost, port: settings.metricsPort });
  log(`metrics at ${served.url}`);
}
let remediations: RemediationController | undefined;
let ipam: IpamController | undefined;
let healthCheck: HealthCheck | undefined;
let capm3: Capm3RemediationBridge | undefined;
let nodeHealth: NodeHealthReporter | undefined;
// The default site's, read only, for the node health conditions and the hosts' firmware: the controller never changes anything in Ironic.
const ironic = new IronicClient({ url: config.ironicUrl, basicAuth: config.ironicBasicAuth, requestTimeoutMs: 20_000, ...(config.ironicTls ? { tls: readTlsFiles(config.ironicTls) } : {}) });
let firmware: FirmwareSettingsController | undefined;
// Shared by every leadership cycle: one Lease read serves every host reconciled at once.
const bmoGuard = new BmoGuard(rest, { leaseNamespace: settings.bmoLeaseNamespace });
if (!settings.bmoCheck) log("METALFLOW_BMO_CHECK=off: hosts are driven without looking for Metal3's operator");

/** Drives hosts while holding the lease; stops at once when it is lost, then campaigns again. */
async function lead(): Promise<void> {
  for (;;) {
    log(`${identity} waiting for the lease`);
    const cycle = { leading: true };
    // Reconciles under way when the lease goes are cut short: another replica may already drive those hosts.
    const leading = new AbortController();
    // Each reconcile under way listens on it once (reconcile-signal.ts): more than Node's default of 10 is expected, not a leak.
    setMaxListeners(settings.concurrency + 10, leading.signal);
    const lost = new Promise<void>((resolve) => {
      void elector.acquire((why) => {
        cycle.leading = false;
        leading.abort(new Error('lost the lease'));
        log(`lost the lease (${why}); stopped driving hosts`);
        informer?.stop();
        secrets?.stop();
        updatePolicies?.stop();
        queue?.stop();
        stopScan?.();
        remediations?.stop();
        healthCheck?.stop();
        capm3?.stop();
        ipam?.stop();
        nodeHealth?.stop();
        firmware?.stop();
        resolve();
      });
    });
    await elector.held();
    log(`${identity} holds the lease`);
    const q = new WorkQueue((key) => reconcileWithDeadline(reconciler, key, leading.signal), {
      maxQueued: 10_000,
      concurrency: settings.concurrency,
      baseBackoffMs: 500,
      maxBackoffMs: 60_000,
      // The informer's cache is the truth: keys refused while the queue was full, and any a lost event or timer left, come from it.
      keys: () => inf.cache.keys(),
      resyncMs: settings.resyncSeconds * 1000,
      log,
    });
    const inf = new Informer<BareMetalHost>(
      rest,
      watchPaths(watchNamespaces, bmhPath),
      (key) => {
        observe(key);
        q.add(key);
        healthCheck?.poke();
        firmware?.hostChanged(key);
      },
      { log },
    );
    // Metal3's HostUpdatePolicy of a host's name: a change queues that host (update-policies.ts).
    const policies = new Informer<HostUpdatePolicyObject>(rest, watchPaths(watchNamespaces, updatePoliciesPath), (key) => inf.cache.has(key) && q.add(key), { log });
    // Secrets, metadata only: a new resourceVersion of a host's credentials Secret is handed to its workflow.
    const sec = new Informer<KubeObject>(rest, watchPaths(watchNamespaces, secretsPath), (key) => enqueueHostsUsing(key), { log, metadataOnly: true });
    const enqueueHostsUsing = (secretKey: string): void => {
      for (const [hostKey, host] of inf.cache) {
        if (credentialSites.includes(host.metadata.labels?.[SITE_LABEL] ?? '')) continue;
        if (`${host.metadata.namespace ?? ''}/${credentialsName(host) ?? ''}` !== secretKey) continue;
        observe(hostKey);
        q.add(hostKey);
      }
    };
    // A host's status ({} before its first status write, undefined once deleted) and what else the metrics need.
    const observe = (key: string): void => {
      const [namespace = '', name = ''] = key.split('/');
      const obj = inf.cache.get(key);
      metrics.observe(namespace, name, obj && (obj.status ?? {}), obj && hostFacts(obj, (ns, n) => sec.cache.has(`${ns}/${n}`), credentialSites));
    };
    const reconciler = new Reconciler({
      rest,
      client,
      taskQueue: config.taskQueue,
      hostOptions: config.hostOptions,
      sites: siteNames,
      credentialSites,
      get: (key) => inf.cache.get(key),
      secretVersion: (namespace, name) => sec.cache.get(`${namespace}/${name}`)?.metadata.resourceVersion,
      requeueAfter: (key, ms) => q.addAfter(key, ms),
      log,
      updatePolicy: (key) => policies.cache.get(key),
      ...(settings.bmoCheck ? { bmoGuard } : {}),
    });
    queue = q;
    informer = inf;
    secrets = sec;
    // Secrets first, so the first reconcile of each host already knows its Secret's version.
    await sec.start();
    // Not awaited (a cluster without the CRD still gets its hosts driven; the list is retried): each policy listed queues its host.
    void policies.start();
    updatePolicies = policies;
    await inf.start();
    log(`watching ${inf.cache.size} BareMetalHosts`);
    const rem = new RemediationController({ rest, client, taskQueue: config.taskQueue, namespaces: watchNamespaces, log,
      onChange: (key) => {
        healthCheck?.poke();
        capm3?.hostRemediationChanged(key);
      },
    });
    remediations = rem;
    // Not awaited: a cluster without the HostRemediation CRD still gets its hosts driven (the list is retried and logged).
    // The health check starts once the HostRemediations are listed: it counts those running.
    const check = settings.healthCheck && new HealthCheck({ rest, config: settings.healthCheck, hosts: () => inf.cache.values(), remediations: () => rem.objects(), log });
    const bridge = settings.remediationCapm3 ? new Capm3RemediationBridge({ rest, namespaces: watchNamespaces, hostRemediation: (key) => rem.get(key), log }) : undefined;
    void rem.start().then(() => {
      // The lease may have gone while the HostRemediations were listed: then nothing starts.
      if (!cycle.leading) return;
      healthCheck = check;
      capm3 = bridge;
      return Promise.all([check?.start(), bridge?.start()]);
    });
    // Metal3 IPAM's IPPools and IPClaims (k8s/controller/ipam.ts); likewise not awaited, for clusters without its CRDs.
    ipam = new IpamController({ rest, client, taskQueue: config.taskQueue, namespaces: watchNamespaces, log });
    void ipam.start();
    if (settings.nodeHealthSeconds > 0) {
      // A configured site's nodes are listed by its site worker; a site that leaves the list untaken past the site watch is dark.
      const siteWatch = config.hostOptions.siteWatchSeconds ?? DEFAULT_SITE_WATCH_SECONDS;
      nodeHealth = new NodeHealthReporter({
        rest, ironic, sites: siteNames, readSite: (site) => readSiteNodeHealth(client, config.taskQueue, site, siteWatch),
        periodMs: settings.nodeHealthSeconds * 1000, hosts: () => inf.cache.values(), log,
      });
      nodeHealth.start();
    }
    // HostFirmwareSettings and FirmwareSchema (k8s/controller/firmware-settings.ts); not awaited either.
    const fw = new FirmwareSettingsController({
      rest, client, ironic, taskQueue: config.taskQueue, namespaces: watchNamespaces, host: (key) => inf.cache.get(key), sites: siteNames,
      resyncSeconds: settings.firmwareResyncSeconds, instance: identity, log,
    });
    firmware = fw;
    void fw.start().then(() => {
      for (const key of inf.cache.keys()) fw.hostChanged(key);
    });
    // Status writes lost with their worker: the objects compared with their workflows' search attributes.
    const stopStatusScan = scanStaleStatus({
      client,
      periodMs: settings.statusScanSeconds * 1000,
      watchNamespaces,
      objectStatus: (key) => objectFacts(inf.cache.get(key)?.status),
      log,
    });
    // Hosts whose workflow ends abnormally from now on; the first list above queued every host once.
    const stopEndedScan = scanEndedWorkflows({
      client,
      periodMs: settings.endedScanSeconds * 1000,
      watchNamespaces,
      enqueue: (key) => inf.cache.has(key) && q.add(key),
      log,
    });
    stopScan = () => {
      stopEndedScan();
      stopStatusScan();
    };
    await lost;
  }
}
void lead();

/**
 * Every Temporal call of one reconcile shares a deadline, so a host whose
 * workflow no worker serves gives its slot back and is retried with backoff
 * (the SDK would otherwise re-send the update for good). The failure is
 * logged: the queue's retry alone would leave an operator nothing to read.
 */
async function reconcileWithDeadline(reconciler: Reconciler, key: string, leading: AbortSignal): Promise<void> {
  const deadline = Date.now() + settings.reconcileTimeoutSeconds * 1000;
  const [namespace = '', name = ''] = key.split('/');
  if (leading.aborted) return;
  try {
    // One trace per reconcile: its Temporal calls, and through them the workflow's work they cause.
    await inSpan(tracing, 'reconcile BareMetalHost', { 'k8s.namespace.name': namespace, 'metal3.host.name': name }, () =>
      withReconcileSignal(leading, (signal) => client.withAbortSignal(signal, () => client.withDeadline(deadline, () => reconciler.reconcile(key)))),
    );
    metrics.reconciled(namespace, name, true);
  } catch (err) {
    if (leading.aborted) return;
    metrics.reconciled(namespace, name, false);
    const hint =
      Date.now() >= deadline
        ? ` (no answer from Temporal within ${settings.reconcileTimeoutSeconds} s: is a worker polling task queue "${config.taskQueue}"?)`
        : '';
    log(`${key}: reconcile failed, retrying with backoff: ${failureText(err)}${hint}`);
    throw err;
  }
}

function secretsPath(namespace?: string): string {
  return namespace ? `/api/v1/namespaces/${namespace}/secrets` : '/api/v1/secrets';
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    informer?.stop();
    secrets?.stop();
    updatePolicies?.stop();
    queue?.stop();
    stopScan?.();
    remediations?.stop();
    healthCheck?.stop();
    capm3?.stop();
    ipam?.stop();
    nodeHealth?.stop();
    firmware?.stop();
    elector.stop();
    void connection.close().then(() => process.exit(0));
  });
}

/** An error and its causes: Temporal's "Workflow Update failed" says why only in its cause (the validator's reason). */
function failureText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error && !err.message.includes(err.cause.message) ? `: ${failureText(err.cause)}` : '';
  return `${err.message}${cause}`;
}
