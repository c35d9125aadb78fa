/**
 * A direct host's firmware step sends its image to the BMC once, whatever
 * happens between the BMC accepting it and the task ending: the BMC resetting
 * itself mid-update (unreachable for a few seconds), or the worker killed
 * (SIGKILL) right after the BMC accepted the update. The BMC is sushy-tools
 * (system mf-bm-09 of the test stack, firmware emulated by
 * scripts/sushy_firmware.py) behind a counting proxy that plays the outage;
 * the SimpleUpdate POSTs are counted there. Workers are their own processes.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Connection } from '@temporalio/client';
import type { ChildProcess } from 'node:child_process';
import type { HostService } from '../../api/host-service';
import { RedfishClient } from '../../clients/redfish/client';
import { componentOf, firmwareInventory } from '../../clients/redfish/firmware';
import type { HostSpec } from '../../model/host';
import type { HostView } from '../../contracts/host';
import { IRONIC_URL, SUSHY_URL, TEMPORAL_ADDRESS } from '../support/env';
import { IronicProxy, type RecordedRequest } from '../../bench/support/ironic-proxy';
import { uniq, waitFor } from '../support/harness';
import { hostWorkflowId } from '../../model/host-ref';
import { temporal } from '@temporalio/proto';
import { WorkerProcesses } from '../support/worker-process';
import { serveFiles, type FileServer } from '../../bench/support/bmc-files';
import { resetRedfishSystem } from '../support/redfish-system';

const NS = 'direct-fw-once';
const SYSTEM = '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000009';
/** How long the BMC stays unreachable once it accepted the update. */
const OUTAGE_MS = 3000;

let bmcProxy: IronicProxy; // generic HTTP proxy: here in front of the Redfish BMC
let images: FileServer;
let connection: Connection;
let hosts: HostService;
const workers = new WorkerProcesses('direct-fw-once', () => IRONIC_URL);
/** Versions unique to this run: sushy's state outlives it. */
const run = Date.now() % 100000;
const VERSIONS = { reset: `7.${run}`, killed: `8.${run}`, replayed: `9.${run}` };

const isSimpleUpdate = (r: RecordedRequest) => r.method === 'POST' && r.path.endsWith('/UpdateService.SimpleUpdate');
const ref = (name: string) => ({ namespace: NS, name });

async function bmcVersion(): Promise<string | undefined> {
  const url = new URL(SUSHY_URL);
  const c = await RedfishClient.connect({ endpoint: { transport: 'http', host: url.hostname, port: Number(url.port), path: SYSTEM }, username: 'admin', password: 'password' });
  try {
    return componentOf(await firmwareInventory(c), 'bmc', c.systemPath)?.version;
  } finally {
    await c.close();
  }
}

const idle = (name: string) => async (): Promise<HostView | undefined> => {
  const v = await hosts.get(ref(name));
  return v.status.provisioning.state === 'available' && !v.currentOperation && !v.cleanRequest ? v : undefined;
};

async function availableHost(): Promise<string> {
  const name = uniq('fw');
  const spec: HostSpec = { bmc: { address: `redfish+${bmcProxy.url}${SYSTEM}`, credentialsName: `${name}-bmc` }, online: false, provisioner: 'direct' };
  await hosts.put(ref(name), { spec, credentials: { username: 'admin', password: 'password' } });
  await waitFor(`${name} available`, idle(name), { timeoutMs: 90_000 });
  return name;
}

/** Deleted while its worker runs, so no host of this file is left waiting for one. */
async function removed(name: string): Promise<void> {
  await hosts.remove(ref(name));
  await waitFor(`${name} gone`, async () => hosts.get(ref(name)).then(() => undefined, () => true), { timeoutMs: 90_000 });
  workers.killAll();
}

const cleanDone = (name: string, count: number) => async () => {
  const v = await idle(name)();
  return v && v.operations.filter((o) => o.kind === 'clean').length === count ? v : undefined;
};

beforeAll(async () => {
  bmcProxy = new IronicProxy(SUSHY_URL);
  await bmcProxy.start();
  images = await serveFiles({
    'reset.bin': Buffer.from(`${VERSIONS.reset}\n`),
    'killed.bin': Buffer.from(`${VERSIONS.killed}\n`),
    'replayed.bin': Buffer.from(`${VERSIONS.replayed}\n`),
  });
  connection = await Connection.connect({ address: TEMPORAL_ADDRESS });
  hosts = workers.hostService(connection);
  await resetRedfishSystem(`redfish+${SUSHY_URL}${SYSTEM}`);
});

// Each test starts its own worker; one left by a failed test would take over the next test's work.
afterEach(() => {
  workers.killAll();
  bmcProxy.interceptor = undefined;
});

afterAll(async () => {
  workers.killAll();
  await Promise.all([bmcProxy?.stop(), images?.close(), connection?.close()]);
});

describe('direct firmware step: one SimpleUpdate', () => {
  it('a BMC that resets mid-update (unreachable for seconds) is waited for, not sent the image again; a step whose version the BMC reports sends nothing', async () => {
    workers.start();
    const name = await availableHost();
    // The BMC goes away as soon as its answer to the update is on its way, and comes back while the task runs on.
    let downUntil = 0;
    bmcProxy.onceAnswered(isSimpleUpdate, () => {
      downUntil = Date.now() + OUTAGE_MS;
    });
    bmcProxy.interceptor = () => (Date.now() < downUntil ? { kind: 'no-answer', ms: 0, forward: false } : undefined);
    const before = bmcProxy.count(isSimpleUpdate);
    await hosts.clean(ref(name), { steps: [{ name: 'firmware', updates: [{ component: 'bmc', url: images.url('reset.bin') }] }] });
    const done = await waitFor('the clean done', cleanDone(name, 1), { timeoutMs: 180_000 });
    bmcProxy.interceptor = undefined;
    // The outage really happened: requests were dropped while the task ran.
    expect(bmcProxy.requests.some((r) => r.injected === 'no answer, not forwarded')).toBe(true);
    expect(bmcProxy.count(isSimpleUpdate) - before).toBe(1);
    expect(images.hits('/reset.bin')).toBe(1);
    expect(await bmcVersion()).toBe(VERSIONS.reset);
    const first = done.operations.filter((o) => o.kind === 'clean').at(-1);
    expect(first?.outcome).toBe('succeeded');
    expect(first?.note).toMatch(new RegExp(`^clean steps: firmware \\(bmc \\S+ → ${VERSIONS.reset.replace('.', '\\.')}\\)$`));

    // The version the BMC already reports: nothing sent.
    await hosts.clean(ref(name), { steps: [{ name: 'firmware', updates: [{ component: 'bmc', url: images.url('reset.bin'), version: VERSIONS.reset }] }] });
    const again = await waitFor('the second clean done', cleanDone(name, 2), { timeoutMs: 120_000 });
    expect(again.operations.filter((o) => o.kind === 'clean').at(-1)).toMatchObject({ outcome: 'succeeded', note: `clean steps: firmware (bmc already ${VERSIONS.reset}, not flashed)` });
    expect(bmcProxy.count(isSimpleUpdate) - before).toBe(1);
    expect(images.hits('/reset.bin')).toBe(1);
    await removed(name);
  }, 300_000);

  it('a worker killed after the BMC accepted the update: the next one follows the BMC task, sends nothing again', async () => {
    let first: ChildProcess = workers.start();
    const name = await availableHost();
    bmcProxy.onceAnswered(isSimpleUpdate, () => {
      first.kill('SIGKILL');
    });
    const before = bmcProxy.count(isSimpleUpdate);
    await hosts.clean(ref(name), { steps: [{ name: 'firmware', updates: [{ component: 'bmc', url: images.url('killed.bin') }] }] });
    await waitFor('the first worker to die', async () => (first.signalCode === 'SIGKILL' ? true : undefined), { timeoutMs: 120_000 });
    const killed = first;
    first = workers.start();
    // The killed worker held the update's attempt: the new worker's is a retry.
    expect(await workers.expireLost(connection, killed)).toBeGreaterThan(0);
    const done = await waitFor('the clean done on the new worker', cleanDone(name, 1), { timeoutMs: 180_000 });
    expect(bmcProxy.count(isSimpleUpdate) - before).toBe(1);
    expect(images.hits('/killed.bin')).toBe(1);
    expect(await bmcVersion()).toBe(VERSIONS.killed);
    expect(done.operations.filter((o) => o.kind === 'clean').at(-1)).toMatchObject({ outcome: 'succeeded' });
    expect(done.operations.filter((o) => o.kind === 'clean').at(-1)?.note).toContain(`→ ${VERSIONS.killed}`);
    await removed(name);
  }, 300_000);

  it('a host reset to before its clean request (the request re-applied by Temporal) follows the BMC task of the first run, sends nothing again', async () => {
    workers.start();
    const name = await availableHost();
    const before = bmcProxy.count(isSimpleUpdate);
    const fetched = images.hits('/replayed.bin');
    // Its own URL per attempt: a retried test must not find the task of its first attempt.
    const url = `${images.url('replayed.bin')}?attempt=${uniq('a')}`;
    await hosts.clean(ref(name), { steps: [{ name: 'firmware', updates: [{ component: 'bmc', url }] }] });
    await waitFor('the clean done', cleanDone(name, 1), { timeoutMs: 180_000 });
    expect(bmcProxy.count(isSimpleUpdate) - before).toBe(1);

    // Reset to the workflow task that accepted requestClean (the host idle and available before it): the clean's events are
    // gone, and Temporal re-applies the update.
    const handle = hosts.client.workflow.getHandle(hostWorkflowId(ref(name)));
    const { runId } = await handle.describe();
    const events = (await handle.fetchHistory()).events ?? [];
    const EventType = temporal.api.enums.v1.EventType;
    const accepted = events.findIndex((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'requestClean');
    expect(accepted).toBeGreaterThan(0);
    const completed = events.slice(0, accepted).map((e, i) => ({ e, i })).filter(({ e }) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
    const point = completed.at(-1)!.e.eventId!;
    await hosts.client.workflowService.resetWorkflowExecution({
      namespace: hosts.client.options.namespace,
      workflowExecution: { workflowId: handle.workflowId, runId },
      reason: 'test: a reset re-applies the clean request',
      workflowTaskFinishEventId: point,
      requestId: uniq('reset'),
    });
    const done = await waitFor('the reset run done with the re-applied clean', async () => {
      const { runId: now } = await handle.describe();
      if (now === runId) return undefined;
      return cleanDone(name, 1)();
    }, { timeoutMs: 180_000 });
    expect(done.operations.filter((o) => o.kind === 'clean').at(-1)).toMatchObject({ outcome: 'succeeded' });
    expect(bmcProxy.count(isSimpleUpdate) - before).toBe(1);
    expect(images.hits('/replayed.bin') - fetched).toBe(1);
    expect(await bmcVersion()).toBe(VERSIONS.replayed);
    await removed(name);
  }, 300_000);
});
