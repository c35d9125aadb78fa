/**
 * Test plumbing around the real stack: a Temporal client, an in-process worker
 * on a task queue of the test's own, the real Ironic client, a secret store in
 * a temporary folder, and waiting on conditions instead of sleeping.
 */
import { recordName } from './file-names';
import { TEST_FETCH_POLICY } from './fetch-policy';
import type { AddressPolicy } from '../../clients/images/address-policy';
import type { PivotPlaneRegistry } from '../../config/pivot-planes';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { IronicClient } from '../../clients/ironic/client';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import type { Tracing } from '../../clients/telemetry/tracing';
import { createWorker } from '../../workers/worker';
import type { WorkerVersion } from '../../config/worker-versioning';
import type { InspectionPreference } from '../../clients/ironic/node-spec';
import type { DhcpSite } from '../../activities/dhcp/activities';
import type { ServedImageCache } from '../../activities/images/cache';
import type { ServedConfigDrives } from '../../activities/images/config-drive';
import { HostService } from '../../api/host-service';
import type { HostWorkflowOptions } from '../../contracts/host';
import { IRONIC_URL, TEMPORAL_ADDRESS, WORKFLOW_BUNDLE_PATH } from './env';

/** Unique, DNS-safe suffix so test runs never collide in Temporal or Ironic. */
/** A name of this file's own; its Ironic node is removed after the file (test/support/ironic-cleanup.ts). */
export const uniq = (prefix: string): string => {
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  recordName(name);
  return name;
};

/** A locally administered unicast MAC, unique per call. */
export function randomMac(): string {
  const b = randomBytes(5);
  return ['52', ...[...b].map((x) => x.toString(16).padStart(2, '0'))].join(':');
}

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  { timeoutMs = 60_000, intervalMs = 200 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export interface Harness {
  env: TestWorkflowEnvironment;
  client: Client;
  nativeConnection: NativeConnection;
  ironic: IronicClient;
  secrets: LocalSecretStore;
  secretDir: string;
  taskQueue: string;
  worker: Worker;
  hosts: HostService;
  close(): Promise<void>;
}

export const FAST_HOST_OPTIONS: Partial<HostWorkflowOptions> = { errorBackoffSeconds: 1, maxErrorBackoffSeconds: 4 };

export async function startHarness(
  opts: {
    ironicUrl?: string;
    /** The worker's Ironic client's request timeout (30 s unless given): a test's Ironic that answers late. */
    ironicRequestTimeoutMs?: number;
    hostOptions?: Partial<HostWorkflowOptions>;
    startWorker?: boolean;
    dataConverter?: DataConverter;
    /** Workflow code other than the test stack's bundle (e.g. test/support/tightened-bundle.ts). */
    workflowCode?: string;
    /** The worker's Kubernetes client: hosts with options.publishStatus write their status to their BareMetalHost. */
    kubernetes?: KubeRest;
    /** METALFLOW_PROVISIONING_LIMIT of the worker (Metal3's 20 when unset). */
    provisioningLimit?: number;
    /** The limiter's check for holders whose run closed (60 s unless set). */
    provisioningLimitCheckSeconds?: number;
    /** Each DHCP site's dnsmasq (test/support/dnsmasq-site.ts). */
    dhcpSites?: Record<string, DhcpSite>;
    /** The worker's image cache (test/support/image-cache.ts). */
    imageCache?: ServedImageCache;
    /** The direct provisioner's config drives (test/support/image-cache.ts). */
    configDrives?: ServedConfigDrives;
    /** The Temporal namespace (default "default"): a second plane's host workflows need their own (ids are per namespace). */
    namespace?: string;
    /** The pivot planes the worker knows (METALFLOW_PIVOT_PLANES); read by each pivot activity, so a test may fill it once its planes are up. */
    pivotPlanes?: PivotPlaneRegistry;
    /** The worker's image fetch policy; loopback let through by default (the tests' image servers). */
    imageFetchPolicy?: AddressPolicy;
    /** The secret store's key (random unless given): other processes' stores on `secretDir` need it. */
    secretKey?: Buffer;
    /** A task queue of the test's own (a fresh one unless given): two workers' harnesses share one. */
    taskQueue?: string;
    /** The worker's Worker Deployment Version; unversioned unless given. */
    version?: WorkerVersion;
    /** Names of the configured sites beside the default one (METALFLOW_SITES_FILE): the API's check of spec.site, the worker's of a fleet's selector.sites. */
    sites?: string[];
    /** Those of them that hold their hosts' BMC credentials themselves (`"secrets": "site"`): the API refuses inline credentials for their hosts. */
    credentialSites?: string[];
    /** METALFLOW_INSPECTION of the worker (out-of-band unless given); the agent path's tests inspect with the agent. */
    inspection?: InspectionPreference;
    /** The worker traces (its bundle, `workflowCode`, must then be built with TRACED_WORKFLOW_BUNDLE_OPTIONS). */
    tracing?: Tracing;
    /** How long a node Ironic keeps locked is polled before the operation fails naming the lock (5 min unless given). */
    nodeLockLimitMs?: number;
  } = {},
): Promise<Harness> {
  const namespace = opts.namespace ?? 'default';
  // @temporalio/testing pointed at the real dev server the stack script started (never a downloaded one).
  const env = await TestWorkflowEnvironment.createFromExistingServer({ address: TEMPORAL_ADDRESS, namespace });
  const { nativeConnection } = env;
  // With a data converter (payload encryption), the client and the worker both use it.
  const client = opts.dataConverter ? new Client({ connection: env.connection, namespace, dataConverter: opts.dataConverter }) : env.client;
  const ironic = new IronicClient({ url: opts.ironicUrl ?? IRONIC_URL, ...(opts.ironicRequestTimeoutMs ? { requestTimeoutMs: opts.ironicRequestTimeoutMs } : {}) });
  const secretDir = mkdtempSync(join(tmpdir(), 'metalflow-secrets-'));
  const secrets = new LocalSecretStore(secretDir, opts.secretKey ?? randomBytes(32));
  const taskQueue = opts.taskQueue ?? uniq('tq');
  const worker = await createWorker(
    { connection: nativeConnection, namespace, taskQueue, ironic, secrets, poll: { initialMs: 100, factor: 1.5, maxMs: 1000, ...(opts.nodeLockLimitMs ? { lockLimitMs: opts.nodeLockLimitMs } : {}) }, dataConverter: opts.dataConverter, kubernetes: opts.kubernetes, provisioningLimit: opts.provisioningLimit, provisioningLimitCheckSeconds: opts.provisioningLimitCheckSeconds, dhcpSites: opts.dhcpSites, imageCache: opts.imageCache, configDrives: opts.configDrives, pivotPlanes: opts.pivotPlanes, ...(opts.sites ? { sites: opts.sites } : {}), ...(opts.credentialSites ? { credentialSites: opts.credentialSites } : {}), imageFetchPolicy: opts.imageFetchPolicy ?? TEST_FETCH_POLICY, version: opts.version, ...(opts.inspection ? { inspection: opts.inspection } : {}), ...(opts.tracing ? { tracing: opts.tracing } : {}) },
    { workflowBundle: opts.workflowCode ? { code: opts.workflowCode } : { codePath: WORKFLOW_BUNDLE_PATH }, workflowsPath: undefined },
  );
  const running = opts.startWorker === false ? undefined : worker.run();
  const hosts = new HostService({ client, secrets, taskQueue, hostOptions: opts.hostOptions ?? FAST_HOST_OPTIONS, ...(opts.sites ? { sites: opts.sites } : {}), ...(opts.credentialSites ? { credentialSites: opts.credentialSites } : {}) });
  return {
    env,
    client,
    nativeConnection,
    ironic,
    secrets,
    secretDir,
    taskQueue,
    worker,
    hosts,
    async close() {
      hosts.close();
      if (running) {
        worker.shutdown();
        await running;
      }
      await env.teardown();
    },
  };
}
