/**
 * The power sentinel and firmware reads per site (docs/sites.md) on the real
 * stack. Site S has an Ironic of its own (scripts/stack.sh on its own port and
 * state folder) and its site worker is a real process (`npm run worker --
 * --site S`, the test bundle), which starts S's sentinel as it starts; the
 * central worker (the harness's, in this process) serves the default site
 * through a proxy of the test Ironic and runs a default-site sentinel for this
 * file's namespace. Hosts check their own power only every hour here: only a
 * sentinel can tell them.
 *
 * - S's host is swept by no sentinel but its own: the default site's sentinel,
 *   made to sweep (a list of its Ironic fails), tells it nothing, though its
 *   node is not in the default site's Ironic. Then S's Ironic loses the node
 *   (its only one): S's sentinel tells the host, which registers again at S,
 *   on a node of S's Ironic.
 * - S's host's firmware is read in S's Ironic by S's worker
 *   (`GET …/firmware-settings`), and with S's worker gone the read is a 503
 *   naming the site, not a read of the default site's Ironic.
 *
 * Signals name who sent them (the sending client's identity, `<pid>@<host>`):
 * this process's workers for the default site's sentinel, the site worker's
 * process for S's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { IronicClient } from '../../clients/ironic/client';
import { REPO_ROOT } from '../../config/env';
import type { HostRef } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { siteTaskQueue } from '../../model/site';
import type { HostView } from '../../contracts/host';
import { powerSentinelWorkflowId, type PowerSentinelWorkflow } from '../../contracts/power-sentinel';
import type { WatchPowerResult } from '../../activities/power/sentinel';
import { SENTINEL_FIELDS } from '../../activities/power/sentinel-changes';
import { IronicProxy } from '../../bench/support/ironic-proxy';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { IRONIC_URL, TEMPORAL_ADDRESS } from '../support/env';
import { ownIronic, type OwnIronic } from '../support/own-ironic';
import { unusedPort } from '../support/ports';
import { processArgs } from '../support/process-bundles';
import { TEST_FETCH_ENV } from '../support/fetch-policy';
import { callApi, serveApi } from '../support/api-client';

const NS = uniq('site-sentinel');
const SITE = uniq('s');
const SITE_SENTINEL = powerSentinelWorkflowId(siteTaskQueue(SITE));
const key = randomBytes(32);
let h: Harness;
let siteIronic: OwnIronic;
let siteIronicClient: IronicClient;
let proxy: IronicProxy;
let siteWorker: ChildProcess | undefined;
let api: Awaited<ReturnType<typeof serveApi>>;
const output: string[] = [];

beforeAll(async () => {
  siteIronic = ownIronic('test-sites-sentinel', await unusedPort());
  proxy = new IronicProxy(IRONIC_URL);
  await Promise.all([siteIronic.start(), proxy.start()]);
  siteIronicClient = new IronicClient({ url: siteIronic.url });
  h = await startHarness({ ironicUrl: proxy.url, sites: [SITE], secretKey: key, hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 3600, watchedPowerCheckSeconds: 3600 } });
  const sitesFile = join(mkdtempSync(join(tmpdir(), 'mf-site-sentinel-')), 'sites.json');
  writeFileSync(sitesFile, JSON.stringify({ sites: [{ name: SITE, ironic: { url: siteIronic.url } }] }));
  siteWorker = spawn(process.execPath, [...processArgs('worker'), '--site', SITE], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS,
      // The central workers' queue: the site's sentinel workflow runs there, its watch on the site's queue.
      METALFLOW_TASK_QUEUE: h.taskQueue,
      METALFLOW_SITES_FILE: sitesFile,
      METALFLOW_SECRET_DIR: h.secretDir,
      METALFLOW_SECRET_KEY: key.toString('base64'),
      METALFLOW_POWER_SENTINEL_SECONDS: '1',
      ...TEST_FETCH_ENV,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [siteWorker.stdout, siteWorker.stderr]) stream?.on('data', (d: Buffer) => output.push(d.toString()));
  siteWorker.stderr?.on('data', (d: Buffer) => process.stderr.write(`[site worker ${siteWorker?.pid}] ${d.toString()}`));
  api = await serveApi(h.hosts);
}, 120_000);

afterAll(async () => {
  siteWorker?.kill('SIGKILL');
  await api?.app.close();
  await h?.client.workflow.getHandle(SITE_SENTINEL).terminate('test done').catch(() => undefined);
  await Promise.all([h?.close(), siteIronic?.stop(), proxy?.stop()]);
});

const view = async (ref: HostRef): Promise<HostView> => (await h.hosts.get(ref)) as HostView;

/** The sentinel's progress, from its watch's last heartbeat. */
async function progress(workflowId: string): Promise<WatchPowerResult | undefined> {
  const d = await h.client.workflow.getHandle(workflowId).describe().catch(() => undefined);
  const payload = d?.raw.pendingActivities?.[0]?.heartbeatDetails?.payloads?.[0];
  return payload ? defaultPayloadConverter.fromPayload<WatchPowerResult>(payload) : undefined;
}

/** Who sent the host each powerChanged signal (the sending client's identity). */
async function tellers(ref: HostRef): Promise<string[]> {
  const events = (await h.client.workflow.getHandle(hostWorkflowId(ref)).fetchHistory()).events ?? [];
  return events.map((e) => e.workflowExecutionSignaledEventAttributes).filter((a) => a?.signalName === 'powerChanged').map((a) => a?.identity ?? '');
}
const fromHere = (identity: string): boolean => identity.startsWith(`${process.pid}@`);

describe('a site of its own', { timeout: 120_000 }, () => {
  const ref = { namespace: NS, name: 'edge-0' };
  let nodeId = '';

  it("S's host is told by S's sentinel alone: the default site's sweep passes it by; its node lost from S's Ironic, it registers again at S", async () => {
    await h.hosts.put(ref, {
      spec: { bmc: { address: `fake://${NS}-edge-0`, credentialsName: 'edge-0-bmc' }, bootMACAddress: randomMac(), online: true, inspectionMode: 'disabled', automatedCleaningMode: 'disabled', site: SITE },
      credentials: { username: 'admin', password: 'pw' },
    });
    const rested = await waitFor('the host available at its site', async () => {
      const v = await view(ref);
      return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 60_000, intervalMs: 300 });
    nodeId = rested.status.provisioning.ID;
    expect((await siteIronicClient.getNode(nodeId))?.extra.metalflow_host).toBe(`${NS}/edge-0`);

    // The default site's sentinel, for this file's hosts (the central worker's own lists every host of the site).
    const sentinel = await h.client.workflow.start<PowerSentinelWorkflow>('powerSentinelWorkflow', {
      workflowId: powerSentinelWorkflowId(uniq(`${h.taskQueue}-default`)),
      taskQueue: h.taskQueue,
      args: [{ intervalSeconds: 1, watchSeconds: 120, namespace: NS }],
    });
    try {
      await waitFor("the default site's sentinel listed its Ironic", async () => ((await progress(sentinel.workflowId))?.lists ?? 0) >= 1);
      // One list fails: the next one sweeps the resting hosts visibility lists (Ironic may have restarted empty).
      proxy.fail((r) => r.method === 'GET' && r.path.startsWith(`/v1/nodes?fields=${SENTINEL_FIELDS.join(',')}&`), 1, 503, 'Service Unavailable');
      await waitFor("the default site's sentinel swept", async () => ((await progress(sentinel.workflowId))?.sweeps ?? 0) >= 1, { timeoutMs: 20_000 });
    } finally {
      await sentinel.terminate('test done');
    }
    // The default site's sweep did not tell S's host, whose node it never saw (its watch had sent it by its heartbeat).
    expect((await tellers(ref)).filter(fromHere)).toEqual([]);
    // S's sentinel, started by S's worker as it started, has listed S's Ironic since the host came to rest.
    const listed = (await progress(SITE_SENTINEL))?.lists ?? 0;
    await waitFor("S's sentinel listed the host's node", async () => ((await progress(SITE_SENTINEL))?.lists ?? 0) > listed, { timeoutMs: 20_000 });

    // S's Ironic loses its one node, behind the host's back (a restart on an empty database costs 15 s more here).
    const lostAt = Date.now();
    await siteIronicClient.setMaintenance(nodeId, 'test: the node goes away');
    await siteIronicClient.deleteNode(nodeId);
    const again = await waitFor('the host registered again at S', async () => {
      const v = await view(ref);
      return v.status.provisioning.ID && v.status.provisioning.ID !== nodeId && v.status.provisioning.state === 'available' && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 60_000, intervalMs: 300 });
    nodeId = again.status.provisioning.ID;
    expect(again.operations.some((o) => o.kind === 'enroll' && o.outcome === 'succeeded' && Date.parse(o.startedAt) > lostAt)).toBe(true);
    expect(again.status.errorCount).toBe(0);
    // At S, not at the default site.
    expect((await siteIronicClient.getNode(nodeId))?.extra.metalflow_host).toBe(`${NS}/edge-0`);
    expect(await h.ironic.getNode(nodeId)).toBeUndefined();
    // Told by S's sentinel (the site worker's process), never by this process's.
    const told = await tellers(ref);
    expect(told.length).toBeGreaterThanOrEqual(1);
    expect(told.every((identity) => identity.startsWith(`${siteWorker?.pid}@`))).toBe(true);
    expect(output.join('')).toContain(`power sentinel ${SITE_SENTINEL} (its workflow on task queue ${h.taskQueue})`);
  });

  it("S's host's firmware is read in S's Ironic by S's worker; with S's worker gone, a 503 naming the site", async () => {
    expect(nodeId).not.toBe('');
    const path = `/v1/namespaces/${NS}/hosts/edge-0/firmware-settings`;
    const from = proxy.requests.length;
    const read = await callApi(api.base, 'GET', path);
    expect(read.status, JSON.stringify(read.json)).toBe(200);
    expect(read.json).toMatchObject({ status: { settings: expect.any(Object) } });
    // The default site's Ironic was not asked.
    expect(proxy.requests.slice(from).filter((r) => r.path.includes(nodeId))).toEqual([]);

    siteWorker?.kill('SIGKILL');
    const dark = await callApi(api.base, 'GET', path);
    expect(dark.status).toBe(503);
    expect(JSON.stringify(dark.json)).toContain(`site unreachable: no worker of site \\"${SITE}\\" took the firmware read from task queue site/${SITE}`);
  });
});
