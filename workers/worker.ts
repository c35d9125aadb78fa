/**
 * Builds the worker: the workflow bundle plus activities wired to their clients
 * (dependency injection as in Temporal's samples), so tests and the binary
 * share one construction.
 */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import type { IronicActivityDeps } from '../activities/ironic/activities';
import { createHostStatusPublish, createKubernetesActivities, createUnconfiguredKubernetesActivities } from '../activities/kubernetes/host-status';
import { createHostStatusWriter, hostStatusSinks } from '../activities/kubernetes/status-writer';
import type { KubeRest } from '../clients/kubernetes/kube-rest';
import { createFleetActivities } from '../activities/fleet/activities';
import { createPivotActivities } from '../activities/pivot/activities';
import type { PivotPlaneRegistry } from '../config/pivot-planes';
import type { AddressPolicy } from '../clients/images/address-policy';
import { createPowerSentinelActivities } from '../activities/power/sentinel';
import { createPlaneCheckActivities } from '../activities/pivot/plane-check';
import type { ServedImageCache } from '../activities/images/cache';
import type { ServedConfigDrives } from '../activities/images/config-drive';
import { createRemediationHostActivities } from '../activities/remediation/host';
import { createRemediationNodeActivities } from '../activities/remediation/node';
import { createRemediationReprovisionActivities } from '../activities/remediation/reprovision';
import type { DhcpSite } from '../activities/dhcp/activities';
import { createLimiterActivities } from '../activities/limiter/activities';
import { createFirmwareInventoryActivities } from '../activities/ironic/firmware-inventory';
import { DEFAULT_PROVISIONING_LIMIT } from '../model/provisioning-limit';
import { activityFailureMapping } from './activity-failures';
import { createSiteActivities } from './site-activities';
import type { WorkerVersion } from '../config/worker-versioning';
import { heartbeatThrottleSeconds } from '../config/env';
import type { Tracing } from '../clients/telemetry/tracing';
import { tracingActivityInterceptors, tracingClientInterceptors, tracingSinks } from '../clients/temporal/tracing-interceptors';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/**
 * Modules evaluated once and shared by every workflow in the worker's V8
 * context. Without this, each cached workflow (a host and every operation
 * child) evaluates its own copy of the bundle's modules, typebox's hundreds
 * of them included: that copy was 44% of a cached host's memory
 * (npm run bench:memory). Only modules without per-workflow state belong
 * here, and none that imports @temporalio/workflow; the SDK deep-freezes
 * their exports. typebox comes along as their import (naming it here does
 * nothing: webpack drops an unused require of a side-effect-free package).
 */
export const WORKFLOW_PRELOAD_MODULES: string[] = [
  ...['bmc', 'failures', 'field-error', 'host-ref', 'host', 'search-attributes', 'validate'].map((m) => `../model/${m}.ts`),
  // Typebox schemas and constants of the other workflow types, which every new workflow evaluated again
  // (workflows/index.ts imports them all): some 0.5 ms of its first workflow task's ~7 ms of worker CPU
  // (bench/results/2026-12-04-first-activity-2.md).
  ...['fleet', 'ipam', 'ipam-address', 'pivot', 'remediation', 'labels', 'host-update-policy', 'site'].map((m) => `../model/${m}.ts`),
  // One AsyncLocalStorage for every workflow instead of one each (see the module's comment).
  '../workflows/host/operation-label.ts',
].map((m) => fileURLToPath(new URL(m, import.meta.url)));

/** Workflows kept in the worker's memory unless METALFLOW_WORKER_MAX_CACHED_WORKFLOWS says otherwise. */
export const DEFAULT_MAX_CACHED_WORKFLOWS = 400;

/** What `bundleWorkflowCode` needs to build the same bundle the worker would (tests and the bench prebuild it). */
export const WORKFLOW_INTERCEPTOR_MODULES = [fileURLToPath(new URL('../workflows/common/interceptors.ts', import.meta.url))];
export const WORKFLOW_BUNDLE_OPTIONS = { workflowsPath: WORKFLOWS_PATH, preloadModules: WORKFLOW_PRELOAD_MODULES, workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES };
/**
 * The bundle of a traced worker: the same plus the Temporal OpenTelemetry workflow interceptors. Only a traced
 * worker has them: untraced, no span is built and no trace header is added to any history.
 */
export const TRACED_WORKFLOW_BUNDLE_OPTIONS = {
  ...WORKFLOW_BUNDLE_OPTIONS,
  // A prebuilt bundle must have been built with it: without it the workflow passes no trace context on.
  workflowInterceptorModules: [...WORKFLOW_INTERCEPTOR_MODULES, fileURLToPath(new URL('../workflows/common/tracing-interceptors.ts', import.meta.url))],
};

export interface WorkerDeps extends IronicActivityDeps {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** When set, hosts driven by the Kubernetes shim get their status written back. */
  kubernetes?: KubeRest;
  /** Payload encryption (clients/temporal/payload-keys.ts); the same on every client and worker. */
  dataConverter?: DataConverter;
  /** CA bundle (PEM) for https Redfish BMCs spoken to directly (METALFLOW_BMC_CACERT_FILE). */
  bmcCa?: Buffer;
  /** CA bundle (PEM) for https image and checksum-file URLs the image check reads (METALFLOW_IMAGE_CACERT_FILE). */
  imageCa?: Buffer;
  /** The image cache this worker fills and serves (METALFLOW_IMAGE_CACHE_DIR); hosts with cacheImages fail without one. */
  imageCache?: ServedImageCache;
  /** The direct provisioner's config drives, served beside the image cache. */
  configDrives?: ServedConfigDrives;
  /** Each site's dnsmasq for DHCP reservations (METALFLOW_DHCP_SITES); none → the DHCP activities refuse every site. */
  dhcpSites?: Record<string, DhcpSite>;
  /** METALFLOW_PROVISIONING_LIMIT: hosts inspecting, provisioning or deprovisioning at once (0: no limit); Metal3's 20 when unset. */
  provisioningLimit?: number;
  /** How long the limiter's queue may stand still before it checks its holders' runs are open (60 s; tests shorten it). */
  provisioningLimitCheckSeconds?: number;
  /** The planes a pivot may name (METALFLOW_PIVOT_PLANES); none registered when unset. */
  pivotPlanes?: PivotPlaneRegistry;
  /** Addresses the image probe, checksum files and image downloads may reach (METALFLOW_IMAGE_FETCH_*); the default-deny policy when unset. */
  imageFetchPolicy?: AddressPolicy;
  /**
   * The Worker Deployment Version it polls as (METALFLOW_WORKER_DEPLOYMENT, METALFLOW_WORKER_BUILD_ID); unset: unversioned.
   * Each workflow type's behavior is in workflows/common/versioning.ts; types it does not name upgrade automatically.
   */
  version?: WorkerVersion;
  /** OpenTelemetry tracing of workflows, activities and their HTTP requests (METALFLOW_OTLP_ENDPOINT); off when unset. */
  tracing?: Tracing;
  /** The configured sites' names (METALFLOW_SITES_FILE): what a fleet operation may select by; the default site alone when unset. */
  sites?: readonly string[];
  /** The sites holding their hosts' BMC credentials themselves (`"secrets": "site"`): a pivot reads none of theirs. */
  credentialSites?: readonly string[];
}

export async function createWorker(
  deps: WorkerDeps,
  overrides: Partial<WorkerOptions> = {},
): Promise<Worker> {
  // Resolved at each use: the process installs its runtime (metrics, log level) before its first connection.
  const log = { warn: (message: string, meta?: Record<string, unknown>) => Runtime.instance().logger.warn(message, meta) };
  // Host workflows hand their BareMetalHost status to this process's writer (a sink: no history, no task held).
  const statusWriter = deps.kubernetes ? createHostStatusWriter({ publish: createHostStatusPublish({ rest: deps.kubernetes, warn: log.warn }), log }) : undefined;
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    ...(deps.dataConverter ? { dataConverter: deps.dataConverter } : {}),
    ...(deps.version ? { workerDeploymentOptions: { useWorkerVersioning: true, version: deps.version, defaultVersioningBehavior: 'AUTO_UPGRADE' } } : {}),
    workflowsPath: WORKFLOWS_PATH,
    // A prebuilt bundle (overrides.workflowBundle) was built with WORKFLOW_BUNDLE_OPTIONS already.
    ...(overrides.workflowBundle ? {} : { bundlerOptions: { preloadModules: WORKFLOW_PRELOAD_MODULES } }),
    interceptors: {
      activity: [...(deps.tracing ? [tracingActivityInterceptors(deps.tracing)] : []), activityFailureMapping],
      ...(deps.tracing ? { client: tracingClientInterceptors(deps.tracing) } : {}),
      ...(overrides.workflowBundle ? {} : { workflowModules: deps.tracing ? TRACED_WORKFLOW_BUNDLE_OPTIONS.workflowInterceptorModules : WORKFLOW_INTERCEPTOR_MODULES }),
    },
    sinks: { ...(deps.tracing ? tracingSinks(deps.tracing) : {}), ...hostStatusSinks(statusWriter, log) },
    activities: {
      // The default site's hardware: Ironic, BMCs, images, config drives, DHCP (a site worker registers these alone).
      ...createSiteActivities(deps),
      // Fleet operations act through the host workflows, with the worker's own Temporal client.
      ...createFleetActivities({ rest: deps.kubernetes, ...(deps.sites ? { sites: deps.sites } : {}) }),
      // The provisioning limiter's permits (workflows/limiter/provisioning-limiter.ts), with the same client.
      ...createLimiterActivities({ limit: deps.provisioningLimit ?? DEFAULT_PROVISIONING_LIMIT, checkSeconds: deps.provisioningLimitCheckSeconds }),
      // A pivot reads and writes both planes' API servers (planes the operator registered, named by id) and watches the source host workflows.
      ...createPivotActivities({ rest: deps.kubernetes, secrets: deps.secrets, ...(deps.credentialSites ? { credentialSites: deps.credentialSites } : {}), ...(deps.pivotPlanes ? { planes: deps.pivotPlanes } : {}) }),
      ...createPlaneCheckActivities({ ironic: deps.ironic }),
      // The power sentinel's watch of every node's power (workflows/power/power-sentinel.ts), signalling hosts with the worker's client.
      ...createPowerSentinelActivities({ ironic: deps.ironic }),
      // Ironic's BIOS settings and firmware components for the controller's HostFirmwareSettings/Components and the API.
      ...createFirmwareInventoryActivities({ ironic: deps.ironic }),
      // Remediations act on the host through its workflow (and its BareMetalHost), on Nodes through the API server.
      ...createRemediationHostActivities({ rest: deps.kubernetes }),
      ...createRemediationNodeActivities({ rest: deps.kubernetes }),
      // Re-provision and re-inspect (opt-in) ask the host what the fleet's deprovision, provision and reinspect ask.
      ...createRemediationReprovisionActivities({ rest: deps.kubernetes }),
      // Without an API server the status write fails for good (a retryable "not registered" held the host for ever).
      ...(deps.kubernetes ? createKubernetesActivities({ rest: deps.kubernetes }) : createUnconfiguredKubernetesActivities()),
    },
    // New hosts and every operation's child workflow start on the shared
    // (non-sticky) queue; the SDK's default gives it 2 of 10 pollers, which
    // caps how fast a fleet-wide change gets its first workflow tasks.
    maxConcurrentWorkflowTaskPolls: 20,
    nonStickyToStickyPollRatio: 0.5,
    // Most activities wait on Ironic or a BMC (a promise, no CPU): a fleet-wide
    // change has one per host in flight, far beyond the SDK's 100 slots.
    maxConcurrentActivityTaskExecutions: 2000,
    maxHeartbeatThrottleInterval: `${heartbeatThrottleSeconds()} seconds`,
    // The SDK sizes the cache from the heap limit (about 2,300 workflows on a
    // 24 GiB machine), so every host of a fleet would stay in memory for good,
    // at about 0.3 MiB each (npm run bench:memory). A host at rest wakes once
    // per power check and replays ~100 events in milliseconds, so the cache
    // need only hold what is active: a host and its operation child for each
    // host an operation is driving (200 at the benchmark's concurrency).
    maxCachedWorkflows: DEFAULT_MAX_CACHED_WORKFLOWS,
    ...overrides,
  });
}
