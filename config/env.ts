/**
 * Runtime configuration from the environment, read once at the edge. Every
 * variable is described in config/settings.ts, from which
 * docs/configuration.md is generated (`npm run docs:config`).
 */
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadTlsConfig, type TemporalConnectionSettings, type TlsConfig } from './tls';
import { DEFAULT_PROVISIONING_LIMIT } from '../model/provisioning-limit';
import { parseImageCacheSites } from '../model/image-cache-site';
import { loadHealthCheckConfig, type HealthCheckConfig } from './health-check';

export type { TemporalConnectionSettings, TemporalTls, TlsConfig, TlsFiles } from './tls';

export const REPO_ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));

/** TLS of each peer (config/tls.ts): Temporal (and its API key), Ironic's API, the BMCs. */
export interface MetalflowConfig extends TlsConfig {
  temporalAddress: string;
  temporalNamespace: string;
  taskQueue: string;
  temporalUiUrl: string;
  ironicUrl: string;
  ironicBasicAuth?: { username: string; password: string };
  inspection: 'agent' | 'out-of-band';
  secretDir: string;
  secretKey?: string;
  secretKeyFile: string;
  /** Payload encryption key ring (clients/temporal/payload-keys.ts); unset: payloads are not encrypted. */
  payloadKeysFile?: string;
  apiHost: string;
  apiPort: number;
  /** How long an API call waits for Temporal to take a change before answering 503. */
  apiUpdateTimeoutSeconds: number;
  workflowBundle?: string;
  /** Kubernetes mode: secrets come from Kubernetes and hosts' status is written back. */
  kubeconfig?: string;
  /** Host workflow options set where workflows are started (API, controller). */
  hostOptions: { powerCheckSeconds?: number; watchedPowerCheckSeconds?: number; softPowerOffSeconds?: number; maxHistoryEvents?: number; probeImages?: boolean; cacheImages?: boolean; imageCacheSites?: string[]; maxProvisioningRetries?: number; dhcpLeaseCheckSeconds?: number; siteWatchSeconds?: number };
  /** Worker capacity; unset fields keep the SDK's defaults. */
  workerTuning: WorkerTuning;
  controller: ControllerConfig;
  /** Address the Prometheus endpoints listen on (loopback unless set). */
  metricsHost: string;
  /** Port of the worker's Prometheus endpoint (the Temporal SDK's own metrics); off when unset. */
  workerMetricsPort?: number;
  /** OTLP/HTTP collector the processes send their traces to (docs/observability.md); tracing is off when unset. */
  otlpEndpoint?: string;
  /** METALFLOW_API_METRICS_PORT: the API's `GET /metrics` (the sites' health, `metalflow_site_*`); off when unset. */
  apiMetricsPort?: number;
  /** The worker's image cache (docs/images.md); off when METALFLOW_IMAGE_CACHE_DIR is unset. */
  imageCache?: ImageCacheConfig;
  /** Hosts inspecting, provisioning or deprovisioning at once (Metal3's PROVISIONING_LIMIT); 0: no limit. */
  provisioningLimit: number;
  /**
   * METALFLOW_POWER_SENTINEL_SECONDS: the worker starts the power sentinel (workflows/power/power-sentinel.ts),
   * listing Ironic's nodes this often; 30 unless set, 0: none (each idle host then checks its power itself
   * every powerCheckSeconds). On by default: at 1,000 hosts it cut the whole lifecycle and the cost at rest
   * (docs/power.md, docs/adr/0002-power-sentinel.md).
   */
  powerSentinelSeconds: number;
  /** METALFLOW_HEARTBEAT_THROTTLE_SECONDS (heartbeatThrottleSeconds below). */
  heartbeatThrottleSeconds: number;
}

export interface ImageCacheConfig {
  dir: string;
  maxBytes: number;
  /** Where the cache's HTTP server listens. */
  host: string;
  port: number;
  /** The base URL Ironic's agent and the BMCs download cached images from (the listen address when unset). */
  url: string;
  /** METALFLOW_IMAGE_CACHE_SITE: this worker is that site's cache and also polls its cache task queue. */
  site?: string;
}

/** 20 GiB: a few dozen OS images. */
export const DEFAULT_IMAGE_CACHE_MAX_BYTES = 20 * 2 ** 30;

function imageCache(env: NodeJS.ProcessEnv): ImageCacheConfig | undefined {
  const dir = env.METALFLOW_IMAGE_CACHE_DIR;
  if (!dir && env.METALFLOW_IMAGE_CACHE_SITE) throw new Error('METALFLOW_IMAGE_CACHE_SITE needs METALFLOW_IMAGE_CACHE_DIR: a site\'s cache worker keeps its images there');
  if (!dir) return undefined;
  const host = env.METALFLOW_IMAGE_CACHE_HOST || '127.0.0.1';
  const port = whole('METALFLOW_IMAGE_CACHE_PORT', env.METALFLOW_IMAGE_CACHE_PORT, 1, 65_535, 'a port from 1 to 65535') ?? 8081;
  const url = env.METALFLOW_IMAGE_CACHE_URL || `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  if (!/^https?:\/\/[^/?#]+\/?$/.test(url)) throw new Error(`METALFLOW_IMAGE_CACHE_URL must be http(s)://host[:port] with no path, got "${url}"`);
  const maxBytes =
    whole('METALFLOW_IMAGE_CACHE_MAX_BYTES', env.METALFLOW_IMAGE_CACHE_MAX_BYTES, 1, Number.MAX_SAFE_INTEGER, 'a whole number of bytes, at least 1') ?? DEFAULT_IMAGE_CACHE_MAX_BYTES;
  const site = parseImageCacheSites(env.METALFLOW_IMAGE_CACHE_SITE, 'METALFLOW_IMAGE_CACHE_SITE');
  if (site && site.length > 1) throw new Error(`METALFLOW_IMAGE_CACHE_SITE names one site, got "${env.METALFLOW_IMAGE_CACHE_SITE}"`);
  return { dir: resolve(dir), maxBytes, host, port, url, ...(site ? { site: site[0] } : {}) };
}

const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * METALFLOW_WATCH_NAMESPACE: unset or empty, every namespace (as BMO without
 * WATCH_NAMESPACE); otherwise a comma-separated list of namespaces.
 */
export function parseWatchNamespaces(value: string | undefined): readonly string[] | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const names = value.split(',').map((n) => n.trim());
  for (const n of names) {
    if (n.length > 63 || !NAMESPACE.test(n)) {
      throw new Error(
        `METALFLOW_WATCH_NAMESPACE must be empty (every namespace) or namespaces separated by commas (DNS-1123 labels, at most 63 characters each), got "${value}": "${n}" is not a namespace`,
      );
    }
  }
  return [...new Set(names)];
}

/** The Kubernetes shim's controller (k8s/controller). */
export interface ControllerConfig {
  /** The namespaces watched, one informer each; every namespace (cluster-wide list and watch) when unset. */
  watchNamespaces?: readonly string[];
  leaseNamespace: string;
  leaseSeconds: number;
  /** Hosts reconciled at the same time. */
  concurrency: number;
  /**
   * How long one reconcile may wait on Temporal. A host whose workflow no
   * worker serves would otherwise hold a reconcile slot for good; past the
   * deadline the reconcile fails and the host is retried with backoff.
   */
  reconcileTimeoutSeconds: number;
  /** How often Temporal is asked which host workflows ended abnormally, to re-adopt those hosts. */
  endedScanSeconds: number;
  /** How often the BareMetalHosts' status is compared with their workflows' search attributes (a write lost with its worker). */
  statusScanSeconds: number;
  /** How often every host is queued again with no event to bring it (a missed watch event, a lost timer). */
  resyncSeconds: number;
  id?: string;
  /** Port of the controller's Prometheus endpoint (metal3_* series) on METALFLOW_METRICS_HOST; off when unset. */
  metricsPort?: number;
  /** Metal3Remediation objects are read (k8s/controller/capm3-remediations.ts): for CAPM3 without its remediation controller. */
  remediationCapm3: boolean;
  /** The built-in health check (config/health-check.ts); undefined: off. */
  healthCheck?: HealthCheckConfig;
  /** How often Ironic's node health and faults become hosts' conditions (k8s/controller/node-health.ts); 0: never. */
  nodeHealthSeconds: number;
  /** How often a host's BIOS settings and firmware components are read from Ironic again (k8s/controller/firmware-settings.ts). */
  firmwareResyncSeconds: number;
  /** Refuse to drive hosts while Metal3's operator is active (k8s/controller/bmo-guard.ts); METALFLOW_BMO_CHECK=off turns it off. */
  bmoCheck: boolean;
  /** Namespace of BMO's leader Lease `baremetal-operator`; unset: any namespace. */
  bmoLeaseNamespace?: string;
}

/** A whole number in [min, max] from the environment, undefined when unset; `what` completes "must be ...". */
function whole(name: string, value: string | undefined, min: number, max: number, what: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be ${what}, got "${value}"`);
  return n;
}

const seconds = (name: string, value: string | undefined, min = 0): number | undefined =>
  whole(name, value, min, 86_400, `whole seconds from ${min} to 86400`);

/**
 * Below 20 a host would continue as new after nearly every operation; above
 * Temporal's warning (10,240 events) the server starts complaining first.
 */
const historyEvents = (value: string | undefined): number | undefined =>
  whole('METALFLOW_MAX_HISTORY_EVENTS', value, 20, 10_240, 'a whole number of events from 20 to 10240');

export interface WorkerTuning {
  /** Workflows kept in memory between tasks: fewer saves memory with many idle hosts, costs a replay on wake-up. */
  maxCachedWorkflows?: number;
  maxConcurrentWorkflowTaskExecutions?: number;
  maxConcurrentActivityTaskExecutions?: number;
  maxConcurrentWorkflowTaskPolls?: number;
  maxConcurrentActivityTaskPolls?: number;
  /** Share of workflow pollers on the shared (non-sticky) queue, where new hosts and new operations arrive. */
  nonStickyToStickyPollRatio?: number;
  /**
   * Threads running workflow code (the SDK's workflowThreadPoolSize; 1 by default with one reused V8 context):
   * each more is a V8 context more, and a second core for workflow tasks when many arrive at once.
   */
  workflowThreadPoolSize?: number;
}

const WORKER_TUNING_ENV: Record<keyof WorkerTuning, string> = {
  maxCachedWorkflows: 'METALFLOW_WORKER_MAX_CACHED_WORKFLOWS',
  maxConcurrentWorkflowTaskExecutions: 'METALFLOW_WORKER_WORKFLOW_TASKS',
  maxConcurrentActivityTaskExecutions: 'METALFLOW_WORKER_ACTIVITY_TASKS',
  maxConcurrentWorkflowTaskPolls: 'METALFLOW_WORKER_WORKFLOW_POLLERS',
  maxConcurrentActivityTaskPolls: 'METALFLOW_WORKER_ACTIVITY_POLLERS',
  nonStickyToStickyPollRatio: 'METALFLOW_WORKER_NONSTICKY_POLL_RATIO',
  workflowThreadPoolSize: 'METALFLOW_WORKER_WORKFLOW_THREADS',
};

function workerTuning(env: NodeJS.ProcessEnv): WorkerTuning {
  const out: WorkerTuning = {};
  for (const [key, name] of Object.entries(WORKER_TUNING_ENV) as [keyof WorkerTuning, string][]) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    const n = Number(raw);
    if (key === 'nonStickyToStickyPollRatio') {
      if (!(n > 0 && n <= 1)) throw new Error(`${name} must be a number in (0, 1], got "${raw}"`);
      out[key] = n;
      continue;
    }
    // The SDK needs at least 2 pollers per kind; 0 cached workflows is allowed (always replay).
    const min = key.endsWith('Polls') ? 2 : key === 'maxCachedWorkflows' ? 0 : 1;
    out[key] = whole(name, raw, min, Number.MAX_SAFE_INTEGER, `an integer >= ${min}`);
  }
  return out;
}

const port = (name: string, value: string | undefined, fallback: number): number => whole(name, value, 0, 65_535, 'a port number') ?? fallback;

/**
 * The longest a worker holds back an activity's heartbeat before sending it
 * (the SDK's maxHeartbeatThrottleInterval). A cancellation reaches an activity
 * only as the answer to a heartbeat sent, so this bounds how long a delete or
 * a removed image takes to stop a deploy under way; lower costs one heartbeat
 * call per waiting activity per interval.
 */
export const DEFAULT_HEARTBEAT_THROTTLE_SECONDS = 15;

export function heartbeatThrottleSeconds(env: NodeJS.ProcessEnv = process.env): number {
  return seconds('METALFLOW_HEARTBEAT_THROTTLE_SECONDS', env.METALFLOW_HEARTBEAT_THROTTLE_SECONDS, 1) ?? DEFAULT_HEARTBEAT_THROTTLE_SECONDS;
}

/** How often the power sentinel lists Ironic's nodes unless METALFLOW_POWER_SENTINEL_SECONDS says otherwise. */
export const DEFAULT_POWER_SENTINEL_SECONDS = 30;

/**
 * glibc's MALLOC_ARENA_MAX for metalflow's Node processes. It is read when a
 * process starts, so the launchers set it (package.json's scripts, the demo,
 * the benchmark), not the process itself. With glibc's default (8 arenas per
 * core) the worker's threads each grow their own heap arenas: at 1,000 hosts
 * at rest the worker held 551 MiB, with 2 arenas 500 MiB (bench/results/2026-11-29-1000-hosts-dev-server.md).
 */
export const RECOMMENDED_MALLOC_ARENA_MAX = '2';

export function loadConfig(env: NodeJS.ProcessEnv = process.env): MetalflowConfig {
  const stateDir = env.METALFLOW_STATE_DIR ?? join(REPO_ROOT, '.state', 'stack');
  const powerSentinelSeconds = seconds('METALFLOW_POWER_SENTINEL_SECONDS', env.METALFLOW_POWER_SENTINEL_SECONDS) ?? DEFAULT_POWER_SENTINEL_SECONDS;
  const inspection = env.METALFLOW_INSPECTION ?? 'out-of-band';
  if (inspection !== 'agent' && inspection !== 'out-of-band') {
    throw new Error(`METALFLOW_INSPECTION must be "agent" or "out-of-band", got "${inspection}"`);
  }
  const ironicUser = env.IRONIC_USERNAME;
  return {
    ...loadTlsConfig(env),
    temporalAddress: env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
    temporalNamespace: env.TEMPORAL_NAMESPACE ?? 'default',
    taskQueue: env.METALFLOW_TASK_QUEUE ?? 'metalflow-hosts',
    temporalUiUrl: env.TEMPORAL_UI_URL ?? 'http://127.0.0.1:8233',
    ironicUrl: env.IRONIC_URL ?? 'http://127.0.0.1:6385',
    ironicBasicAuth: ironicUser ? { username: ironicUser, password: env.IRONIC_PASSWORD ?? '' } : undefined,
    inspection,
    secretDir: env.METALFLOW_SECRET_DIR ?? join(stateDir, 'secrets'),
    secretKey: env.METALFLOW_SECRET_KEY,
    secretKeyFile: env.METALFLOW_SECRET_KEY_FILE ?? join(stateDir, 'secret.key'),
    payloadKeysFile: env.METALFLOW_PAYLOAD_KEYS_FILE || undefined,
    apiHost: env.METALFLOW_API_HOST ?? '127.0.0.1',
    apiPort: port('METALFLOW_API_PORT', env.METALFLOW_API_PORT, 8080),
    apiUpdateTimeoutSeconds: seconds('METALFLOW_API_UPDATE_TIMEOUT_SECONDS', env.METALFLOW_API_UPDATE_TIMEOUT_SECONDS, 1) ?? 60,
    workflowBundle: env.METALFLOW_WORKFLOW_BUNDLE || undefined,
    kubeconfig: env.METALFLOW_KUBECONFIG || undefined,
    hostOptions: Object.fromEntries(
      Object.entries({
        powerCheckSeconds: seconds('METALFLOW_POWER_CHECK_SECONDS', env.METALFLOW_POWER_CHECK_SECONDS),
        // With the power sentinel on, a host on an Ironic node checks only as a backstop (1800 unless set).
        watchedPowerCheckSeconds:
          seconds('METALFLOW_WATCHED_POWER_CHECK_SECONDS', env.METALFLOW_WATCHED_POWER_CHECK_SECONDS) ?? (powerSentinelSeconds > 0 ? 1800 : undefined),
        // Ironic needs a positive timeout for a soft power off.
        softPowerOffSeconds: seconds('METALFLOW_SOFT_POWER_OFF_SECONDS', env.METALFLOW_SOFT_POWER_OFF_SECONDS, 1),
        maxHistoryEvents: historyEvents(env.METALFLOW_MAX_HISTORY_EVENTS),
        // Probe the image (and read a checksum-file URL) before each deploy: docs/images.md.
        probeImages: ((n) => (n === undefined ? undefined : n === 1))(whole('METALFLOW_PROBE_IMAGES', env.METALFLOW_PROBE_IMAGES, 0, 1, '0 or 1')),
        // Deploy through the workers' image cache (patch image-cache): docs/images.md.
        cacheImages: ((n) => (n === undefined ? undefined : n === 1))(whole('METALFLOW_CACHE_IMAGES', env.METALFLOW_CACHE_IMAGES, 0, 1, '0 or 1')),
        // Sites whose own worker caches their hosts' images (patch image-cache-site): docs/images.md.
        imageCacheSites: parseImageCacheSites(env.METALFLOW_IMAGE_CACHE_SITES),
        // BMO's --max-provisioning-retries (default 5; 0: no limit).
        maxProvisioningRetries: whole('METALFLOW_MAX_PROVISIONING_RETRIES', env.METALFLOW_MAX_PROVISIONING_RETRIES, 0, 1000, 'a whole number from 0 (no limit) to 1000'),
        // How often an idle host with spec.dhcp reads its lease into status.dhcp (60; 0: never): docs/dhcp-and-ipam.md.
        dhcpLeaseCheckSeconds: seconds('METALFLOW_DHCP_LEASE_CHECK_SECONDS', env.METALFLOW_DHCP_LEASE_CHECK_SECONDS),
        // How long a site may leave a host's hardware call unstarted before the host says it is unreachable (60): docs/sites.md.
        siteWatchSeconds: seconds('METALFLOW_SITE_WATCH_SECONDS', env.METALFLOW_SITE_WATCH_SECONDS, 1),
      }).filter(([, v]) => v !== undefined),
    ),
    workerTuning: workerTuning(env),
    controller: {
      watchNamespaces: parseWatchNamespaces(env.METALFLOW_WATCH_NAMESPACE),
      leaseNamespace: env.METALFLOW_LEASE_NAMESPACE || 'default',
      // At least 2 s: the holder renews it every third of it.
      leaseSeconds: seconds('METALFLOW_LEASE_SECONDS', env.METALFLOW_LEASE_SECONDS, 2) ?? 15,
      concurrency: whole('METALFLOW_CONTROLLER_CONCURRENCY', env.METALFLOW_CONTROLLER_CONCURRENCY, 1, 10_000, 'a whole number from 1 to 10000') ?? 64,
      reconcileTimeoutSeconds:
        seconds('METALFLOW_CONTROLLER_RECONCILE_TIMEOUT_SECONDS', env.METALFLOW_CONTROLLER_RECONCILE_TIMEOUT_SECONDS, 1) ?? 60,
      endedScanSeconds: seconds('METALFLOW_CONTROLLER_ENDED_SCAN_SECONDS', env.METALFLOW_CONTROLLER_ENDED_SCAN_SECONDS, 1) ?? 30,
      // One visibility list of the running host workflows per scan, whatever the fleet's size.
      statusScanSeconds: seconds('METALFLOW_CONTROLLER_STATUS_SCAN_SECONDS', env.METALFLOW_CONTROLLER_STATUS_SCAN_SECONDS, 1) ?? 60,
      // A resync of an idle host costs one describe (no query, no history): 1,000 hosts every 10 minutes is ~100 a minute.
      resyncSeconds: seconds('METALFLOW_CONTROLLER_RESYNC_SECONDS', env.METALFLOW_CONTROLLER_RESYNC_SECONDS, 1) ?? 600,
      id: env.METALFLOW_CONTROLLER_ID || undefined,
      metricsPort: whole('METALFLOW_CONTROLLER_METRICS_PORT', env.METALFLOW_CONTROLLER_METRICS_PORT, 1, 65_535, 'a port from 1 to 65535'),
      remediationCapm3: ((v) => {
        if (!['', 'true', 'false'].includes(v)) throw new Error(`METALFLOW_REMEDIATION_CAPM3 must be "true" or "false", got "${v}"`);
        return v === 'true';
      })(env.METALFLOW_REMEDIATION_CAPM3 ?? ''),
      healthCheck: loadHealthCheckConfig(env),
      // BMO reads them on every reconcile; one list of all nodes a minute costs Ironic one request.
      nodeHealthSeconds:
        whole('METALFLOW_CONTROLLER_NODE_HEALTH_SECONDS', env.METALFLOW_CONTROLLER_NODE_HEALTH_SECONDS, 0, 86_400, 'a whole number of seconds from 0 (off) to 86400') ?? 60,
      // A host's firmware changes through a clean, a service or an inspection, each a state change that reads it at once.
      firmwareResyncSeconds: seconds('METALFLOW_FIRMWARE_RESYNC_SECONDS', env.METALFLOW_FIRMWARE_RESYNC_SECONDS, 1) ?? 1800,
      bmoCheck: ((v) => {
        if (!['', 'on', 'off'].includes(v)) throw new Error(`METALFLOW_BMO_CHECK must be "on" or "off" (drive hosts even while Metal3's operator looks active), got "${v}"`);
        return v !== 'off';
      })(env.METALFLOW_BMO_CHECK ?? ''),
      bmoLeaseNamespace: env.METALFLOW_BMO_LEASE_NAMESPACE || undefined,
    },
    metricsHost: env.METALFLOW_METRICS_HOST || '127.0.0.1',
    workerMetricsPort: whole('METALFLOW_WORKER_METRICS_PORT', env.METALFLOW_WORKER_METRICS_PORT, 1, 65_535, 'a port from 1 to 65535'),
    otlpEndpoint: otlpEndpoint(env),
    apiMetricsPort: whole('METALFLOW_API_METRICS_PORT', env.METALFLOW_API_METRICS_PORT, 1, 65_535, 'a port from 1 to 65535'),
    imageCache: imageCache(env),
    provisioningLimit:
      whole('METALFLOW_PROVISIONING_LIMIT', env.METALFLOW_PROVISIONING_LIMIT, 0, 100_000, 'a whole number of hosts from 0 (no limit) to 100000') ?? DEFAULT_PROVISIONING_LIMIT,
    powerSentinelSeconds,
    heartbeatThrottleSeconds: heartbeatThrottleSeconds(env),
  };
}

/**
 * METALFLOW_OTLP_ENDPOINT, else OpenTelemetry's own OTEL_EXPORTER_OTLP_ENDPOINT: an http(s) URL, checked at
 * start so a typo stops the process instead of silently tracing nothing.
 */
function otlpEndpoint(env: NodeJS.ProcessEnv): string | undefined {
  const name = env.METALFLOW_OTLP_ENDPOINT ? 'METALFLOW_OTLP_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  const raw = env[name];
  if (!raw) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`${name} must be an http(s) URL of an OTLP/HTTP collector (e.g. http://127.0.0.1:4318), got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`${name} must be an http(s) URL of an OTLP/HTTP collector (e.g. http://127.0.0.1:4318), got a ${url.protocol} URL`);
  }
  return raw;
}

/** How every process that talks to Temporal connects (clients/temporal/connection.ts builds the SDK's options). */
export function temporalConnection(config: Pick<MetalflowConfig, 'temporalAddress' | 'temporalTls' | 'temporalApiKey'>): TemporalConnectionSettings {
  return { address: config.temporalAddress, tls: config.temporalTls, apiKey: config.temporalApiKey };
}
