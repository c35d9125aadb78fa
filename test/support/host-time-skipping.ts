/**
 * Tier 0's host workflow: the real workflow bundle (the worker's own bundle
 * options, its interceptors included) on Temporal's time-skipping test server,
 * its Ironic activities the fixture provisioner's (fixture-provisioner.ts), the
 * provisioning limiter and its activities the real ones, and the API's own
 * HostService in front. Timers keep their production values: `skip()` moves the
 * server's clock past them, so a 10-minute backoff or a 5-minute power check
 * costs a few milliseconds, and continue-as-new, cancellation and pause run as
 * they do in production. No stack.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { temporal } from '@temporalio/proto';
import { REPO_ROOT } from '../../config/env';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Duration } from '@temporalio/common';
import type { WorkflowHandle } from '@temporalio/client';
import { activityFailureMapping } from '../../workers/activity-failures';
import { createLimiterActivities } from '../../activities/limiter/activities';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { HostService } from '../../api/host-service';
import { hostWorkflowId } from '../../model/host-ref';
import { hostWorkflowStart } from '../../control/host-run';
import type { HostRef, HostSpec } from '../../model/host';
import { applySpecUpdate, hostViewQuery, type HostView, type HostWorkflowOptions } from '../../contracts/host';
import type { hostWorkflow } from '../../workflows/host/host';
import { fixtureProvisioner, type FixtureProvisioner } from './fixture-provisioner';
import { timeSkippingEnv } from './time-skipping';
import { randomMac, waitFor } from './harness';
import { runWorkflowBundle } from './run-bundles';

export { timeSkippingUnavailable } from './time-skipping';


/** The host workflows' search attributes (scripts/search-attributes.txt), as the stack registers them: the server refuses others. */
async function registerSearchAttributes(env: TestWorkflowEnvironment): Promise<void> {
  const types = temporal.api.enums.v1.IndexedValueType;
  const searchAttributes: Record<string, temporal.api.enums.v1.IndexedValueType> = {};
  for (const line of readFileSync(join(REPO_ROOT, 'scripts', 'search-attributes.txt'), 'utf8').split('\n')) {
    const m = /^\s*(\w+)=(\w+)\s*$/.exec(line);
    if (m) searchAttributes[m[1]!] = types[`INDEXED_VALUE_TYPE_${m[2]!.replace(/List$/, '_LIST').toUpperCase()}` as keyof typeof types];
  }
  await env.connection.operatorService.addSearchAttributes({ namespace: env.namespace ?? 'default', searchAttributes });
}

export interface HostTimeSkipping {
  env: TestWorkflowEnvironment;
  fixture: FixtureProvisioner;
  hosts: HostService;
  secrets: LocalSecretStore;
  taskQueue: string;
  /** Moves the server's clock `by` ahead, firing every timer due on the way, once each workflow waits. */
  skip(by: Duration): Promise<void>;
  handle(ref: HostRef): WorkflowHandle<typeof hostWorkflow>;
  view(ref: HostRef): Promise<HostView>;
  /** A fake-hardware host put through the API (its BMC needs no pre-flight: Ironic's fake driver); `options` over the harness's. */
  put(ref: HostRef, over?: Partial<HostSpec>, options?: Partial<HostWorkflowOptions>): Promise<HostView>;
  /** Waits (in real time, the clock standing still) until `probe` holds for the host's view. */
  until(ref: HostRef, what: string, probe: (v: HostView) => boolean): Promise<HostView>;
  /** Skips `step` at a time (up to `max` steps) until `probe` holds: for a state behind one or more timers. */
  skipUntil(ref: HostRef, what: string, probe: (v: HostView) => boolean, opts?: { step?: Duration; max?: number }): Promise<HostView>;
  close(): Promise<void>;
}

export async function startHostTimeSkipping(opts: { hostOptions?: Partial<HostWorkflowOptions>; provisioningLimit?: number } = {}): Promise<HostTimeSkipping> {
  const [env, code] = await Promise.all([timeSkippingEnv(), runWorkflowBundle()]);
  await registerSearchAttributes(env);
  const fixture = fixtureProvisioner();
  const taskQueue = `host-ts-${randomBytes(4).toString('hex')}`;
  const secretDir = mkdtempSync(join(tmpdir(), 'metalflow-ts-secrets-'));
  const secrets = new LocalSecretStore(secretDir, randomBytes(32));
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: { code },
    interceptors: { activity: [activityFailureMapping] },
    activities: { ...fixture.activities, ...createLimiterActivities({ limit: opts.provisioningLimit ?? 20, client: env.client }) },
  });
  const running = worker.run();
  const hosts = new HostService({ client: env.client, secrets, taskQueue, ...(opts.hostOptions ? { hostOptions: opts.hostOptions } : {}) });
  const handle = (ref: HostRef) => env.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref));
  const view = (ref: HostRef) => handle(ref).query(hostViewQuery);
  const until = (ref: HostRef, what: string, probe: (v: HostView) => boolean) =>
    waitFor(`${ref.name}: ${what}`, async () => {
      const v = await view(ref);
      return probe(v) ? v : undefined;
    }, { timeoutMs: 30_000, intervalMs: 50 });
  return {
    env,
    fixture,
    hosts,
    secrets,
    taskQueue,
    skip: (by) => env.sleep(by),
    handle,
    view,
    async put(ref, over = {}, options = {}) {
      // The test server serves no update-with-start (HostService.put's): the same start, then the same update.
      const spec: HostSpec = { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true, ...over };
      await secrets.write(ref.namespace, `${ref.name}-bmc`, { username: 'admin', password: 'pw' });
      const start = hostWorkflowStart(ref, taskQueue, { ...opts.hostOptions, ...options });
      await env.client.workflow.start('hostWorkflow', { ...start.options, workflowIdConflictPolicy: 'FAIL' });
      await handle(ref).executeUpdate(applySpecUpdate, { args: [spec] });
      return view(ref);
    },
    until,
    async skipUntil(ref, what, probe, { step = '1 minute', max = 200 } = {}) {
      let v = await view(ref);
      for (let i = 0; i < max; i++) {
        if (probe(v)) return v;
        await env.sleep(step);
        v = await view(ref);
      }
      const ops = v.operations.map((o) => `${o.kind}:${o.outcome}`).join(' ');
      throw new Error(`${ref.name}: ${what} did not happen within ${max} skips of ${String(step)} (${v.status.provisioning.state}, ${v.status.operationalStatus}, ${ops}; ${v.status.errorMessage})`);
    },
    async close() {
      hosts.close();
      worker.shutdown();
      await running;
      await env.teardown();
      rmSync(secretDir, { recursive: true, force: true });
    },
  };
}
