/**
 * Sites (docs/sites.md) on the real Temporal and Ironic of the test stack: the
 * central worker (the harness's) serves the default site; site B's worker
 * (workers/site-worker.ts) polls B's own task queue. Both sites' workers
 * point at the same test Ironic (a second Ironic per test costs a stack of its
 * own); what is shown is where the work goes: B's hardware calls are taken
 * only from B's queue, so with B's worker stopped B's host waits, showing
 * `site unreachable`, while a default-site host registers and inspects; B's
 * worker started again, B's host completes each operation once.
 *
 * Moving a registered host between sites: FROM's worker drives the test
 * Ironic, TO's worker an Ironic of its own (scripts/stack.sh on its own port
 * and state folder), each behind a recording proxy, so what each Ironic was
 * asked (deploys, power changes, node creates and deletes) is counted. The
 * central worker (the harness's, started here so it can be replaced) is
 * stopped mid-move and a new one takes the move over from its history.
 */
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostRef } from '../../model/host';
import type { HostView } from '../../contracts/host';
import { siteTaskQueue } from '../../model/site';
import { createSiteWorker } from '../../workers/site-worker';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { ApiError } from '../../api/api-error';
import { IronicClient } from '../../clients/ironic/client';
import { SiteHealthReader, type SiteHealth } from '../../control/site-health';
import { DEFAULT_SITE } from '../../model/site';
import { callApi, serveApi } from '../support/api-client';
import { siteMetricsRegistry } from '../../api/site-metrics';
import { hostWorkflowId, ironicNodeName } from '../../model/host-ref';
import proto from '@temporalio/proto';
import { IRONIC_URL, WORKFLOW_BUNDLE_PATH } from '../support/env';
import { createWorker } from '../../workers/worker';
import { ownIronic, type OwnIronic } from '../support/own-ironic';
import { unusedPort } from '../support/ports';
import { IronicProxy, isPowerChange, type RecordedRequest } from '../../bench/support/ironic-proxy';
import { provisionVerb, siteMoveFigures } from '../k8s/pivot-figures';
import { fleetEnded, startFleet, waitForFleet } from '../support/fleet-hosts';
import { saveHistory } from '../support/history-fixture';

const { EventType, TimeoutType } = proto.temporal.api.enums.v1;

const NS = 'sites';
const WATCH_SECONDS = 2;
const SITE_B = uniq('b');
let h: Harness;
/** Configured for the health check only: no worker, and an Ironic URL on a loopback port nothing listens on. */
const SITE_C = uniq('c');
let siteB: { worker: Worker; running: Promise<void> } | undefined;
let api: Awaited<ReturnType<typeof serveApi>>;
let health: SiteHealthReader;
/** A registered host moves from FROM (the test Ironic) to TO (an Ironic of its own); each Ironic behind a recording proxy. */
const FROM = uniq('from');
const TO = uniq('to');
let toIronic: OwnIronic | undefined;
const proxies: Record<string, IronicProxy> = {};
const moveWorkers: Array<{ worker: Worker; running: Promise<void> }> = [];
/** The central worker (the default site's, and every host workflow's): stopped and replaced once, mid-move. */
let central: { worker: Worker; running: Promise<void> } | undefined;
const runWorker = (worker: Worker) => ({ worker, running: worker.run() });

beforeAll(async () => {
  toIronic = ownIronic('test-sites-move-to', await unusedPort());
  [h] = await Promise.all([startHarness({ startWorker: false, hostOptions: { ...FAST_HOST_OPTIONS, siteWatchSeconds: WATCH_SECONDS }, sites: [SITE_B, FROM, TO] }), toIronic.start()]);
  central = runWorker(h.worker);
  for (const [site, url] of [[FROM, IRONIC_URL], [TO, toIronic.url]] as const) {
    const proxy = new IronicProxy(url);
    await proxy.start();
    proxies[site] = proxy;
    const worker = await createSiteWorker({ connection: h.nativeConnection, namespace: 'default', taskQueue: siteTaskQueue(site), ironic: new IronicClient({ url: proxy.url }), secrets: h.secrets, poll: { initialMs: 100, factor: 1.5, maxMs: 1000 } });
    moveWorkers.push({ worker, running: worker.run() });
  }
  health = new SiteHealthReader(
    h.client,
    [
      { name: DEFAULT_SITE, taskQueue: h.taskQueue, ironic: h.ironic },
      { name: SITE_B, taskQueue: siteTaskQueue(SITE_B), ironic: h.ironic },
      { name: SITE_C, taskQueue: siteTaskQueue(SITE_C), ironic: new IronicClient({ url: 'http://127.0.0.1:9', requestTimeoutMs: 2000 }) },
    ],
    0,
  );
  api = await serveApi(h.hosts, { sites: health });
});

afterAll(async () => {
  await api?.app.close();
  if (siteB) {
    siteB.worker.shutdown();
    await siteB.running;
  }
  for (const w of [...moveWorkers, ...(central ? [central] : [])]) w.worker.shutdown();
  await Promise.all([...moveWorkers, ...(central ? [central] : [])].map((w) => w.running));
  // The second Ironic's stop (a few seconds) beside the harness's.
  await Promise.all([h?.close(), toIronic?.stop(), ...Object.values(proxies).map((p) => p.stop())]);
});

async function startSiteB(): Promise<void> {
  if (siteB) return;
  const worker = await createSiteWorker({ connection: h.nativeConnection, namespace: 'default', taskQueue: siteTaskQueue(SITE_B), ironic: h.ironic, secrets: h.secrets, poll: { initialMs: 100, factor: 1.5, maxMs: 1000 } });
  siteB = { worker, running: worker.run() };
}

const view = async (ref: HostRef): Promise<HostView> => (await h.hosts.get(ref)) as HostView;
const settle = <T>(what: string, probe: () => Promise<T | undefined | false>) => waitFor(what, probe, { timeoutMs: 300_000, intervalMs: 300 });
/** Each host keeps its boot MAC across puts: a changed one would register the host again. */
const macs = new Map<string, string>();
const macOf = (ref: HostRef): string => macs.get(ref.name) ?? macs.set(ref.name, randomMac()).get(ref.name)!;
const put = (ref: HostRef, site: string | undefined, bmc = true) =>
  h.hosts.put(ref, {
    spec: { ...(bmc ? { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` } } : {}), bootMACAddress: macOf(ref), online: true, ...(site ? { site } : {}) },
    ...(bmc ? { credentials: { username: 'admin', password: 'pw' } } : {}),
  });
/** The host's history: its length, and the times its calls were left unstarted past their limit. */
async function history(ref: HostRef): Promise<{ events: number; unstarted: number[]; lastType: number | null | undefined }> {
  const events = (await h.client.workflow.getHandle(hostWorkflowId(ref)).fetchHistory()).events ?? [];
  const unstarted = events
    .filter((e) => e.activityTaskTimedOutEventAttributes?.failure?.timeoutFailureInfo?.timeoutType === TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START)
    .map((e) => Number(e.eventTime?.seconds ?? 0) * 1000);
  return { events: events.length, unstarted, lastType: events.at(-1)?.eventType };
}
const sites = async (): Promise<Record<string, SiteHealth>> => {
  const res = await callApi(api.base, 'GET', '/v1/sites');
  expect(res.status).toBe(200);
  return Object.fromEntries((res.json.items as SiteHealth[]).map((s) => [s.name, s]));
};
const available = (ref: HostRef) =>
  settle(`${ref.name} available`, async () => {
    const v = await view(ref);
    return v.status.provisioning.state === 'available' && !v.currentOperation ? v : undefined;
  });

describe('sites', { timeout: 900_000 }, () => {
  it('refuses a site that is not configured, naming the accepted ones', async () => {
    const ref = { namespace: NS, name: uniq('nosite') };
    const err = await put(ref, 'http://10.0.0.1:6385').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(400);
    expect((err as ApiError).message).toContain(`"http://10.0.0.1:6385" is not a configured site; the sites are "default", "${SITE_B}", "${FROM}", "${TO}"`);
  });

  it("a dark site's host waits, showing site unreachable, while the default site's host carries on; back, it completes once", async () => {
    const b = { namespace: NS, name: uniq('host-b') };
    const a = { namespace: NS, name: uniq('host-a') };
    await put(b, SITE_B);
    const waiting = await settle(`${b.name} site unreachable`, async () => (await view(b)).siteUnreachable);
    expect(waiting).toMatchObject({ site: SITE_B });
    expect(waiting.reason).toMatch(new RegExp(`^site unreachable: no worker of site "${SITE_B}" took \\w+ from task queue site/${SITE_B}`));
    // The call sent again once the site was found dark is in the history.
    const dark = await settle(`${b.name}'s call sent again`, async () => {
      const seen = await history(b);
      return seen.unstarted.length > 0 && seen.lastType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED ? seen : undefined;
    });

    // The sites as the API shows them: B has no worker and B's call waits on its queue; the default site's worker
    // (the harness's) polls and the test Ironic answers; C neither.
    const dark1 = await sites();
    expect(Object.keys(dark1)).toEqual([DEFAULT_SITE, SITE_B, SITE_C]);
    expect(dark1[DEFAULT_SITE]).toMatchObject({ healthy: true, problems: [], ironic: { reachable: true } });
    expect(dark1[DEFAULT_SITE]!.workers.length).toBeGreaterThan(0);
    expect(dark1[SITE_B]).toMatchObject({ healthy: false, workers: [], ironic: { reachable: true } });
    expect(dark1[SITE_B]!.problems).toEqual([`no worker polls task queue site/${SITE_B} (its worker: npm run worker -- --site ${SITE_B})`]);
    expect(dark1[SITE_B]!.backlog?.tasks).toBeGreaterThanOrEqual(1);
    expect(dark1[SITE_C]).toMatchObject({ healthy: false, ironic: { reachable: false } });
    expect(dark1[SITE_C]!.problems).toHaveLength(2);
    // The same as metrics.
    const metrics = await siteMetricsRegistry(health).metrics();
    expect(metrics).toContain(`metalflow_site_healthy{site="${DEFAULT_SITE}"} 1`);
    expect(metrics).toContain(`metalflow_site_healthy{site="${SITE_B}"} 0`);
    expect(metrics).toContain(`metalflow_site_workers{site="${SITE_B}"} 0`);
    expect(metrics).toMatch(new RegExp(`metalflow_site_backlog_tasks\\{site="${SITE_B}"\\} [1-9]`));
    expect(metrics).toContain(`metalflow_site_ironic_reachable{site="${SITE_C}"} 0`);

    await put(a, undefined);
    const hostA = await available(a);
    expect(hostA.siteUnreachable).toBeUndefined();
    // B has not moved: nothing of B ran on the central worker.
    const stillB = await view(b);
    expect(stillB.status.provisioning.ID).toBe('');
    expect(stillB.siteUnreachable).toMatchObject({ site: SITE_B });
    // Its history stopped growing: the call waits on B's queue for as long as B stays dark, with no limit to
    // run out and nothing sent again (each re-sent call cost 5 events, for ever). Given the time in which a
    // limit of twice the first would have run out, had there been one.
    const quiet = dark.unstarted[0]! + 3 * WATCH_SECONDS * 1000 - Date.now();
    if (quiet > 0) await new Promise((r) => setTimeout(r, quiet));
    expect(await history(b)).toEqual(dark);

    await startSiteB();
    const back = await settle(`site ${SITE_B} healthy`, async () => ((await sites())[SITE_B]?.healthy ? (await sites())[SITE_B] : undefined));
    expect(back.workers.length).toBeGreaterThan(0);
    expect(Date.parse(back.lastPollAt!)).toBeGreaterThan(Date.now() - 60_000);
    const hostB = await available(b);
    expect(hostB.siteUnreachable).toBeUndefined();
    // Each operation once, each succeeded: the calls sent while B was dark never ran.
    const kinds = hostB.operations.map((o) => o.kind);
    expect(new Set(kinds).size).toBe(kinds.length);
    expect(hostB.operations.every((o) => o.outcome === 'succeeded')).toBe(true);
    expect(await h.ironic.getNode(hostB.status.provisioning.ID)).toBeDefined();
    await Promise.all([h.hosts.remove(a), h.hosts.remove(b)]);
  });

  it('moves an available host by a fleet operation to a site that shares its Ironic: the same node stays the host\'s, out of the move\'s maintenance; refuses a detached one; an unregistered one\'s site just changes', async () => {
    await startSiteB();
    const reg = { namespace: NS, name: uniq('move-reg') };
    await put(reg, undefined);
    const before = await available(reg);
    const fleet = await startFleet(api.base, { name: uniq('move'), operation: { kind: 'moveSite', site: SITE_B }, selector: { hosts: [reg] } });
    const done = await waitForFleet(api.base, fleet.name, fleetEnded, 'the move fleet ended');
    expect(done.phase).toBe('completed');
    expect(done.counts).toMatchObject({ succeeded: 1, failed: 0, skipped: 0 });
    const moved = await view(reg);
    expect(moved.siteMove).toBeUndefined();
    expect(moved.spec?.site).toBe(SITE_B);
    expect(moved.status.provisioning).toMatchObject({ state: 'available', ID: before.status.provisioning.ID });
    expect(moved.operations.filter((o) => o.kind === 'move').map((o) => o.outcome)).toEqual(['succeeded']);
    expect((await h.ironic.getNode(before.status.provisioning.ID))?.maintenance).toBe(false);

    const detached = { namespace: NS, name: uniq('move-detached') };
    await put(detached, undefined);
    await available(detached);
    await h.hosts.setDetached(detached, { deleteAction: 'delete', force: false });
    await settle(`${detached.name} detached`, async () => (await view(detached)).status.operationalStatus === 'detached');
    const err = await put(detached, SITE_B).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(409);
    expect((err as ApiError).message).toMatch(/spec\.site: the host is available at site "default"; it cannot move to site ".*" now: it has no Ironic node of its own now/);
    expect((await view(detached)).spec?.site).toBeUndefined();

    const bare = { namespace: NS, name: uniq('move-bare') };
    await put(bare, undefined, false);
    await settle(`${bare.name} unmanaged`, async () => (await view(bare)).status.provisioning.state === 'unmanaged');
    await put(bare, SITE_B, false);
    expect((await view(bare)).spec?.site).toBe(SITE_B);
    expect((await view(bare)).siteMove).toBeUndefined();
    await Promise.all([h.hosts.remove(reg), h.hosts.remove(detached), h.hosts.remove(bare)]);
  });

  it("a move the new site refuses, withdrawn by setting the site back, is undone: the host stays at the old site with its node, out of the move's maintenance", async () => {
    const ref = { namespace: NS, name: uniq('unmove') };
    const spec = { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true, inspectionMode: 'disabled' as const, automatedCleaningMode: 'disabled' as const };
    await h.hosts.put(ref, { spec: { ...spec, site: FROM }, credentials: { username: 'admin', password: 'pw' } });
    const before = await settle(`${ref.name} available at ${FROM}`, async () => {
      const v = await view(ref);
      return v.status.provisioning.state === 'available' && !v.currentOperation && v.status.operationalStatus === 'OK' ? v : undefined;
    });
    const fromNode = before.status.provisioning.ID;
    // TO's Ironic refuses to create this host's node, for as long as the test needs.
    const create = (r: RecordedRequest) => r.method === 'POST' && r.path === '/v1/nodes' && r.body.includes(`"${ironicNodeName(ref)}"`);
    proxies[TO]!.fail(create, 1000, 400, 'refused by the test');
    const sent = { from: proxies[FROM]!.requests.length, to: proxies[TO]!.requests.length };
    await h.hosts.put(ref, { spec: { ...spec, site: TO } });
    const failing = await settle(`${ref.name}'s move failing`, async () => {
      const v = await view(ref);
      return v.siteMove && v.operations.some((o) => o.kind === 'move' && o.outcome === 'failed') ? v : undefined;
    });
    expect(failing.siteMove).toMatchObject({ from: FROM, to: TO, fromNode });
    expect(failing.status.provisioning.ID).toBe(fromNode);
    // Held at the old site while the new one refuses.
    expect((await h.ironic.getNode(fromNode))?.maintenance).toBe(true);

    // Back to the old site: taken between attempts (one running answers 409, and the PUT is sent again).
    await settle(`${ref.name} sent back`, () =>
      h.hosts.put(ref, { spec: { ...spec, site: FROM } }).then(
        () => true,
        (e: unknown) => {
          if (e instanceof ApiError && e.status === 409) return false;
          throw e;
        },
      ),
    );
    const back = await settle(`${ref.name}'s move undone`, async () => {
      const v = await view(ref);
      const last = v.operations.at(-1);
      return !v.siteMove && !v.currentOperation && last?.kind === 'move' && last.outcome === 'succeeded' ? v : undefined;
    });
    expect(back.operations.at(-1)!.note).toContain(`the move to site "${TO}" was undone`);
    expect(back.spec?.site).toBe(FROM);
    expect(back.status).toMatchObject({ operationalStatus: 'OK', provisioning: { state: 'available', ID: fromNode } });
    expect(await h.ironic.getNode(fromNode)).toMatchObject({ maintenance: false, provision_state: 'manageable' });
    const atFrom = proxies[FROM]!.requests.slice(sent.from);
    expect({
      powerChanges: atFrom.filter(isPowerChange).length,
      verbs: atFrom.map(provisionVerb).filter(Boolean),
      nodeDeletes: atFrom.filter((r) => r.method === 'DELETE' && /^\/v1\/nodes\/[^/]+$/.test(r.path)).length,
      holds: atFrom.filter((r) => /\/maintenance$/.test(r.path)).map((r) => r.method),
    }).toEqual({ powerChanges: 0, verbs: [], nodeDeletes: 0, holds: ['PUT', 'DELETE'] });
    // TO's Ironic was asked (and refused) and holds no node of the host.
    expect(proxies[TO]!.requests.slice(sent.to).filter(create).length).toBeGreaterThanOrEqual(1);
    expect(await new IronicClient({ url: toIronic!.url }).getNode(ironicNodeName(ref))).toBeUndefined();
    await h.hosts.remove(ref);
  });

  it('moves a provisioned host to a site with its own Ironic: adopted there as it is (no deploy, no power change), gone from the old Ironic; then powered off and deleted through the new site', async () => {
    const ref = { namespace: NS, name: uniq('mover') };
    const image = { url: 'http://127.0.0.1/images/site-move.qcow2', checksum: 'c'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };
    const spec = { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true, image, inspectionMode: 'disabled' as const, automatedCleaningMode: 'disabled' as const };
    await h.hosts.put(ref, { spec: { ...spec, site: FROM }, credentials: { username: 'admin', password: 'pw' } });
    const atRest = (v: HostView, state: string) => v.status.provisioning.state === state && !v.currentOperation && !v.siteMove && v.status.operationalStatus === 'OK';
    const before = await settle(`${ref.name} provisioned at ${FROM}`, async () => {
      const v = await view(ref);
      return atRest(v, 'provisioned') && v.status.poweredOn ? v : undefined;
    });
    const fromNode = before.status.provisioning.ID;
    const sent = { from: proxies[FROM]!.requests.length, to: proxies[TO]!.requests.length };
    const since = (site: string, at: number) => proxies[site]!.requests.slice(at);

    // TO's Ironic answers the adoption only after a while: meanwhile the central worker, which runs the host
    // workflow, stops, and a new one (with none of its cache) takes the move over once TO has adopted the node.
    const adopt = (r: RecordedRequest) => provisionVerb(r) === 'adopt';
    proxies[TO]!.hold(adopt, 2000);
    // On the old code this was a 409: a registered host could not change its site.
    await h.hosts.put(ref, { spec: { ...spec, site: TO } });
    await settle('the adoption sent to TO', async () => proxies[TO]!.requests.some(adopt));
    central!.worker.shutdown();
    await central!.running;
    central = undefined;
    const toClient = new IronicClient({ url: toIronic!.url });
    await settle(`${ref.name}'s node adopted at ${TO}`, async () => (await toClient.getNode(ironicNodeName(ref)))?.provision_state === 'active');
    central = runWorker(
      await createWorker(
        { connection: h.nativeConnection, namespace: 'default', taskQueue: h.taskQueue, ironic: h.ironic, secrets: h.secrets, poll: { initialMs: 100, factor: 1.5, maxMs: 1000 }, sites: [SITE_B, FROM, TO] },
        { workflowBundle: { codePath: WORKFLOW_BUNDLE_PATH }, workflowsPath: undefined },
      ),
    );
    const moved = await settle(`${ref.name} moved to ${TO}`, async () => {
      const v = await view(ref);
      return atRest(v, 'provisioned') && v.status.provisioning.ID !== fromNode ? v : undefined;
    });
    expect(moved.spec?.site).toBe(TO);
    expect(moved.status.poweredOn).toBe(true);
    expect(moved.status.provisioning.image?.url).toBe(image.url);
    const after = moved.operations.filter((o) => o.seq > before.operations.at(-1)!.seq);
    expect(after.map((o) => [o.kind, o.outcome])).toEqual([['move', 'succeeded']]);
    expect(after[0]!.note).toContain(`moved from site "${FROM}" to site "${TO}"`);
    // The node is at TO's Ironic, active and out of maintenance, and no longer at FROM's.
    expect(await toClient.getNode(moved.status.provisioning.ID)).toMatchObject({ provision_state: 'active', maintenance: false });
    expect(await h.ironic.getNode(fromNode)).toBeUndefined();

    const move = { from: siteMoveFigures(since(FROM, sent.from)), to: siteMoveFigures(since(TO, sent.to)) };
    process.stderr.write(`[sites test] the move's Ironic requests: ${JSON.stringify(move)}\n`);
    expect(move).toEqual({
      // FROM: the node held in maintenance, then deleted as it is: no deprovision, no power change.
      from: { deploys: 0, verbs: [], powerChanges: 0, nodeCreates: 0, maintenance: 1, nodeDeletes: 1 },
      // TO: registered and adopted, never deployed, never powered.
      to: { deploys: 0, verbs: ['adopt', 'manage'], powerChanges: 0, nodeCreates: 1, maintenance: 0, nodeDeletes: 0 },
    });

    // From now on the host is TO's: powered off there, deleted there (deprovisioned, its node removed); FROM hears nothing.
    const then = { from: proxies[FROM]!.requests.length, to: proxies[TO]!.requests.length };
    await h.hosts.put(ref, { spec: { ...spec, site: TO, online: false } });
    await settle(`${ref.name} off`, async () => {
      const v = await view(ref);
      return atRest(v, 'provisioned') && !v.status.poweredOn ? v : undefined;
    });
    await h.hosts.remove(ref);
    await settle(`${ref.name} deleted`, () => h.hosts.get(ref).then(() => false, (e: unknown) => e instanceof ApiError && e.status === 404));
    const atTo = since(TO, then.to);
    expect(atTo.filter((r) => isPowerChange(r) && /power off/.test(r.body)).length).toBeGreaterThanOrEqual(1);
    expect(atTo.map(provisionVerb).filter(Boolean)).toContain('deleted');
    expect(await toClient.getNode(moved.status.provisioning.ID)).toBeUndefined();
    expect(since(FROM, then.from)).toEqual([]);
    // The baseline replay fixture of a host that moved between sites: METALFLOW_RECORD_SITE_MOVE_FIXTURE=host-site-move.json.
    if (process.env.METALFLOW_RECORD_SITE_MOVE_FIXTURE) saveHistory(hostWorkflowId(ref), process.env.METALFLOW_RECORD_SITE_MOVE_FIXTURE);
  });
});
