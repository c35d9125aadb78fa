/**
 * Worker Versioning on the real dev server: two builds of one deployment, each
 * with the product's workflow bundle (createWorker) on one task queue and a
 * small PINNED probe workflow on another. The first build becomes current by
 * itself (a fresh install); the second is ramped and promoted with the temporal
 * CLI commands docs/operations.md gives. A PINNED run stays on the build that
 * started it, a new run goes to the new build, the host workflow moves.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { Worker } from '@temporalio/worker';
import { decodeVersioningBehavior } from '@temporalio/common';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { REPO_ROOT } from '../../config/env';
import type { WorkerVersion } from '../../config/worker-versioning';
import { becomeCurrentIfNone } from '../../workers/deployment-version';
import { hostWorkflowId } from '../../model/host-ref';
import { randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { TEMPORAL_ADDRESS } from '../support/env';
import { proceedSignal, type pinnedProbeWorkflow } from '../support/versioning-probe-workflows';
import type { planeCheckWorkflow } from '../../workflows/pivot/plane-check';

const run = promisify(execFile);
// Fresh for each attempt (a retry must not find the last attempt's deployment).
let deploymentName = '';
let productQueue = '';
let probeQueue = '';
const NS = 'versioning';

const harnesses: Harness[] = [];
const probes: { worker: Worker; running: Promise<void> }[] = [];

async function startBuild(version: WorkerVersion): Promise<Harness> {
  const h = await startHarness({ taskQueue: productQueue, version });
  harnesses.push(h);
  const worker = await Worker.create({
    connection: h.nativeConnection,
    taskQueue: probeQueue,
    workflowsPath: fileURLToPath(new URL('../support/versioning-probe-workflows.ts', import.meta.url)),
    workerDeploymentOptions: { useWorkerVersioning: true, version, defaultVersioningBehavior: 'AUTO_UPGRADE' },
  });
  probes.push({ worker, running: worker.run() });
  return h;
}

/** The version and behavior Temporal records for a run. */
async function versioning(handle: WorkflowHandle): Promise<{ buildId?: string; behavior?: string }> {
  const info = (await handle.describe()).raw.workflowExecutionInfo?.versioningInfo;
  return { buildId: info?.deploymentVersion?.buildId ?? undefined, behavior: decodeVersioningBehavior(info?.behavior) };
}

/** The documented operator command, run with the stack's temporal CLI against the test server. */
async function cli(...args: string[]): Promise<void> {
  await run(join(REPO_ROOT, '.venv', 'bin', 'temporal'), ['worker', 'deployment', ...args, '--address', TEMPORAL_ADDRESS]);
}

async function currentBuild(client: Client): Promise<string | undefined> {
  const d = await client.workflowService.describeWorkerDeployment({ namespace: 'default', deploymentName });
  return d.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId ?? undefined;
}

afterAll(async () => {
  for (const p of probes) p.worker.shutdown();
  await Promise.all(probes.map((p) => p.running));
  for (const h of harnesses) await h.close();
});

describe('worker versioning', () => {
  it('keeps PINNED runs on their build, starts new ones on the current build, and moves the host workflow', async () => {
    deploymentName = uniq('mf-wv');
    productQueue = uniq('tq-wv');
    probeQueue = uniq('tq-wv-probe');
    const v1: WorkerVersion = { deploymentName, buildId: 'v1' };
    const v2: WorkerVersion = { deploymentName, buildId: 'v2' };
    const h1 = await startBuild(v1);
    const client = h1.client;
    // A fresh deployment: the first build makes itself current, no operator step.
    await expect(becomeCurrentIfNone({ connection: client.connection, namespace: 'default', version: v1, identity: 'test' })).resolves.toEqual({ kind: 'made-current' });
    expect(await currentBuild(client)).toBe('v1');

    const pinned = await client.workflow.start<typeof pinnedProbeWorkflow>('pinnedProbeWorkflow', { taskQueue: probeQueue, workflowId: uniq('probe-old') });
    await waitFor('the probe pinned to v1', async () => ((await versioning(pinned)).buildId === 'v1' ? true : undefined));
    expect(await versioning(pinned)).toEqual({ buildId: 'v1', behavior: 'PINNED' });

    // A product short-lived type is PINNED (workflows/common/versioning.ts), the host workflow AUTO_UPGRADE.
    const check = await client.workflow.start<typeof planeCheckWorkflow>('planeCheckWorkflow', { taskQueue: productQueue, workflowId: uniq('plane-check') });
    await check.result();
    expect(await versioning(check)).toEqual({ buildId: 'v1', behavior: 'PINNED' });
    const name = uniq('wv-host');
    const ref = { namespace: NS, name };
    const spec = { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` }, bootMACAddress: randomMac(), online: true };
    await h1.hosts.put(ref, { spec, credentials: { username: 'a', password: 'b' } });
    const host = client.workflow.getHandle(hostWorkflowId(ref));
    await waitFor('the host on v1', async () => ((await versioning(host)).buildId === 'v1' ? true : undefined));
    expect((await versioning(host)).behavior).toBe('AUTO_UPGRADE');

    // The new build runs beside the old one and takes nothing until the operator says so.
    await startBuild(v2);
    await expect(becomeCurrentIfNone({ connection: client.connection, namespace: 'default', version: v2, identity: 'test' })).resolves.toEqual({ kind: 'not-current', currentBuildId: 'v1' });
    // Canary, then promote: the commands of docs/operations.md. Each waits for the version to have pollers on every queue.
    await waitFor('v2 ramped', async () => cli('set-ramping-version', '--deployment-name', deploymentName, '--build-id', 'v2', '--percentage', '10', '--yes').then(() => true, () => undefined));
    await cli('set-current-version', '--deployment-name', deploymentName, '--build-id', 'v2', '--yes');
    expect(await currentBuild(client)).toBe('v2');

    // The pinned run's next task runs on v1; a new run goes to v2.
    await pinned.signal(proceedSignal);
    expect(await pinned.result()).toEqual(['v1', 'v1']);
    expect(await versioning(pinned)).toEqual({ buildId: 'v1', behavior: 'PINNED' });
    const fresh = await client.workflow.start<typeof pinnedProbeWorkflow>('pinnedProbeWorkflow', { taskQueue: probeQueue, workflowId: uniq('probe-new') });
    await fresh.signal(proceedSignal);
    expect(await fresh.result()).toEqual(['v2', 'v2']);
    const check2 = await client.workflow.start<typeof planeCheckWorkflow>('planeCheckWorkflow', { taskQueue: productQueue, workflowId: uniq('plane-check') });
    await check2.result();
    expect(await versioning(check2)).toEqual({ buildId: 'v2', behavior: 'PINNED' });

    // The host's next workflow task (a spec change) runs on v2.
    await h1.hosts.put(ref, { spec: { ...spec, online: false } });
    await waitFor('the host on v2', async () => ((await versioning(host)).buildId === 'v2' ? true : undefined));
    expect((await versioning(host)).behavior).toBe('AUTO_UPGRADE');
  });

  it('runs the same workflow types on an unversioned worker (METALFLOW_WORKER_VERSIONING=off)', async () => {
    const h = await startHarness();
    harnesses.push(h);
    const check = await h.client.workflow.start<typeof planeCheckWorkflow>('planeCheckWorkflow', { taskQueue: h.taskQueue, workflowId: uniq('plane-check') });
    await check.result();
    expect(await versioning(check)).toEqual({ buildId: undefined, behavior: undefined });
  });
});
