/**
 * Sites in Kubernetes mode (docs/sites.md), on the real kube-apiserver,
 * Temporal and Ironic:
 *
 * - a dark site: a BareMetalHost labelled with a configured site whose worker
 *   is not running waits, and says so on the object (the condition
 *   `SiteReachable` False, a `SiteUnreachable` Warning Event); the site's
 *   worker started (`npm run worker -- --site NAME`, the same Ironic as the
 *   test stack's), the host registers and the condition turns True; its
 *   HostFirmwareSettings are read through the site's worker;
 * - a move: a provisioned BareMetalHost of the default site (the central
 *   worker's, the test Ironic) moved by a `moveSite` fleet, which sets its
 *   `metalflow.io/site` label, to site TO (an Ironic of its own,
 *   scripts/stack.sh on its own port and state folder), each Ironic behind a
 *   recording proxy, as test/integration/sites.test.ts moves an API host
 *   between two configured sites. The default site spares a site worker's
 *   start;
 * - node health per site: a host of TO's has its `Healthy` from TO's Ironic,
 *   listed by TO's worker (the controller reads only the default site's
 *   Ironic itself); TO's worker SIGKILLed, the host is `Unknown` /
 *   `SiteUnreachable`, not failed; TO's worker back, the reading returns. The proxies run in this process: the move's part polls with short
 *   `kubectl get`s (answered in this process) and never `kubectl wait`s.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IRONIC_URL } from '../support/env';
import { uniq, waitFor } from '../support/harness';
import { DEFAULT_SITE, SITE_LABEL } from '../../model/site';
import { hostWorkflowId, ironicNodeName } from '../../model/host-ref';
import { saveHistory } from '../support/history-fixture';
import { fleetWorkflowId, type FleetProgress } from '../../contracts/fleet';
import { firmwareInventoryWorkflowId } from '../../contracts/firmware-inventory';
import { siteNodeHealthWorkflowId } from '../../contracts/node-health';
import { REPO_ROOT } from '../../config/env';
import type { fleetWorkflow } from '../../workflows/fleet/fleet';
import { IronicClient } from '../../clients/ironic/client';
import { IronicProxy, type RecordedRequest } from '../../bench/support/ironic-proxy';
import { ownIronic, type OwnIronic } from '../support/own-ironic';
import { unusedPort } from '../support/ports';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { provisionVerb, siteMoveFigures } from './pivot-figures';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-sites');
const TQ = uniq('tq-sites');
/** A site of this file's own: its task queue (`site/<name>`) is shared by every worker on the Temporal server. */
const SITE = uniq('edge');
/** A host moves from FROM, the default site (the central worker's, the test Ironic), to TO (an Ironic of its own). */
const FROM = DEFAULT_SITE;
const TO = uniq('to');
const SITES_FILE = join(mkdtempSync(join(tmpdir(), 'mf-k8s-sites-')), 'sites.json');
const SITES = { METALFLOW_SITES_FILE: SITES_FILE };
let toIronic: OwnIronic | undefined;
const TO_STATE = 'test-k8s-sites-to';
/** TO's site worker (started by the move's test, or the node health test), killed and started again by the latter. */
let toWorker: ChildProcess | undefined;
/** TO's Ironic starting while the API server, the shim and the first test go on. */
let toStarted: Promise<void> | undefined;
const proxies: Record<string, IronicProxy> = {};
// Registered before the suite's: the sites file is read by the processes it starts.
beforeAll(async () => {
  toIronic = ownIronic(TO_STATE, await unusedPort());
  toStarted = toIronic.start();
  for (const [site, url] of [[FROM, IRONIC_URL], [TO, toIronic.url]] as const) {
    proxies[site] = new IronicProxy(url);
    await proxies[site].start();
  }
  const sites = [{ name: SITE, ironic: { url: IRONIC_URL } }, { name: TO, ironic: { url: proxies[TO]!.url } }];
  writeFileSync(SITES_FILE, JSON.stringify({ sites }));
});
afterAll(async () => {
  await toStarted?.catch(() => undefined);
  await Promise.all([toIronic?.stop(), ...Object.values(proxies).map((p) => p.stop())]);
});
// The controller starts the host workflows: the watch (60 s unless set) is one of their options.
// The central worker drives the default site's hardware through FROM's proxy.
// Node health read every 2 s (the default site's Ironic by the controller, TO's and SITE's through their workers).
const suite = useShimSuite(NS, TQ, { ...SITES, METALFLOW_SITE_WATCH_SECONDS: '2', METALFLOW_CONTROLLER_NODE_HEALTH_SECONDS: '2' }, () => ({ ...SITES, IRONIC_URL: proxies[FROM]!.url }));

const json = (args: string[]) => JSON.parse(kubectl([...args, '-n', NS, '-o', 'json']).stdout);
const apply = (doc: Record<string, unknown>) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc) });
interface Condition { type: string; status: string; reason: string; message: string }
const condition = (name: string, type: string): Condition | undefined =>
  (json(['get', 'bmh', name]).status?.conditions as Condition[] | undefined)?.find((c) => c.type === type);
const siteCondition = (name: string): Condition | undefined => condition(name, 'SiteReachable');
const events = (name: string) =>
  JSON.parse(kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']).stdout).items as { type: string; reason: string; message: string }[];

describe('a host of a dark site', () => {
  it('shows SiteReachable False with a Warning Event while its site takes nothing, and True once its site worker runs', { timeout: 180_000 }, async () => {
    const name = 'edge-host';
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'pw' }));
    const doc = hostDoc(name, fakeHostSpec(name));
    apply({ ...doc, metadata: { ...doc.metadata, labels: { [SITE_LABEL]: SITE } } });

    const dark = await waitFor('SiteReachable False', async () => (siteCondition(name)?.status === 'False' ? siteCondition(name) : undefined), { timeoutMs: 60_000 });
    expect(dark).toMatchObject({ reason: 'SiteUnreachable', message: expect.stringMatching(new RegExp(`^site unreachable: no worker of site "${SITE}" took \\S+ from task queue site/${SITE}; waiting for the site`)) });
    // Nothing of the site's work ran elsewhere: the host has no node yet.
    expect(json(['get', 'bmh', name]).status.provisioning.ID).toBe('');
    const warning = await waitFor('the SiteUnreachable Event', async () => events(name).find((e) => e.reason === 'SiteUnreachable'), { timeoutMs: 30_000 });
    expect(warning).toMatchObject({ type: 'Warning', message: dark!.message });

    // The site's worker comes: the waiting call is taken, the host registers and the condition turns True.
    suite.shim.startWorker(SITES, ['--site', SITE]);
    // Polled, not `kubectl wait`ed: this process's Ironic proxies (the move's, below) must go on answering meanwhile.
    await waitFor(`${name} available`, async () => json(['get', 'bmh', name]).status?.provisioning?.state === 'available', { timeoutMs: 120_000, intervalMs: 300 });
    await waitFor('SiteReachable True', async () => siteCondition(name)?.status === 'True', { timeoutMs: 30_000 });
    expect(siteCondition(name)).toMatchObject({ reason: 'SiteReachable' });
    expect(events(name).filter((e) => e.reason === 'SiteUnreachable')).toHaveLength(1);
    expect(events(name).find((e) => e.reason === 'SiteReachable')).toMatchObject({ type: 'Normal' });

    // Its HostFirmwareSettings come from its site's Ironic, read by its site worker: the controller reads only the
    // default site's Ironic itself, a configured site's node through a firmware read whose read runs on the site's queue.
    await waitFor('the HostFirmwareSettings status', async () => {
      const r = kubectl(['get', 'hostfirmwaresettings', name, '-n', NS, '-o', 'jsonpath={.status.conditions[*].type}'], { check: false });
      return r.status === 0 && r.stdout.includes('Valid');
    }, { timeoutMs: 30_000, intervalMs: 300 });
    const read = await suite.client.workflow.getHandle(firmwareInventoryWorkflowId(NS, name)).fetchHistory();
    expect((read.events ?? []).map((e) => e.activityTaskScheduledEventAttributes?.taskQueue?.name).filter(Boolean)).toEqual([`site/${SITE}`]);
  });
});

interface MoverBmh {
  metadata: { labels?: Record<string, string> };
  status?: { operationalStatus?: string; poweredOn?: boolean; provisioning?: { state: string; ID: string; image?: { url: string } } };
}

describe('a BareMetalHost moved between sites', () => {
  it('moves when a moveSite fleet sets its site label: adopted at the new site as it is (no deploy, no power change), gone from the old one; a label change it cannot take now is refused with a condition and a Warning Event', { timeout: 180_000 }, async () => {
    const name = 'mover';
    const ref = { namespace: NS, name };
    const image = { url: 'http://127.0.0.1/images/k8s-site-move.qcow2', checksum: 'd'.repeat(64), checksumType: 'sha256', format: 'qcow2' };
    // TO's worker starts while the host provisions.
    toWorker = suite.shim.startWorker(SITES, ['--site', TO]);
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'pw' }));
    const doc = hostDoc(name, fakeHostSpec(name, { image, automatedCleaningMode: 'disabled' }), { 'inspect.metal3.io': 'disabled' });
    // No label: the default site.
    apply(doc);
    const get = (): MoverBmh => json(['get', 'bmh', name]) as MoverBmh;
    const atRest = (b: MoverBmh) => b.status?.provisioning?.state === 'provisioned' && b.status.operationalStatus === 'OK' && b.status.poweredOn === true;
    const before = await waitFor(`${name} provisioned at ${FROM}`, async () => (atRest(get()) ? get() : undefined), { timeoutMs: 120_000, intervalMs: 300 });
    const fromNode = before.status!.provisioning!.ID;
    // A host of the default site has no SiteReachable: its work is the central workers'.
    expect(siteCondition(name)).toBeUndefined();
    await toStarted;
    const sent = { from: proxies[FROM]!.requests.length, to: proxies[TO]!.requests.length };

    // TO adopts the node, and its answer waits here: meanwhile the label is changed to a third site, which the host refuses.
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const adopt = (r: RecordedRequest) => provisionVerb(r) === 'adopt';
    proxies[TO]!.onceAnswered(adopt, () => gate);
    const fleet = uniq('move');
    const moving = suite.client.workflow.execute<typeof fleetWorkflow>('fleetWorkflow', {
      taskQueue: TQ,
      workflowId: fleetWorkflowId(fleet),
      args: [{ name: fleet, operation: { kind: 'moveSite', site: TO }, selector: { hosts: [ref] } }],
    });
    await waitFor('the adoption sent to TO', async () => proxies[TO]!.requests.some(adopt), { timeoutMs: 60_000 });
    // The fleet wrote the label: what kubectl shows.
    expect(get().metadata.labels?.[SITE_LABEL]).toBe(TO);
    expect(await waitFor('the SiteMoveStarted Event', async () => events(name).find((e) => e.reason === 'SiteMoveStarted'))).toMatchObject({ type: 'Normal', message: `moving from site "${FROM}" (Ironic node ${fromNode}) to site "${TO}": no deploy, no power change` });

    kubectl(['label', 'bmh', name, '-n', NS, `${SITE_LABEL}=${SITE}`, '--overwrite']);
    const refused = await waitFor('SiteLabelAccepted False', async () => (condition(name, 'SiteLabelAccepted')?.status === 'False' ? condition(name, 'SiteLabelAccepted') : undefined), { timeoutMs: 30_000 });
    const why = `metadata.labels["${SITE_LABEL}"]: the host is moving from site "${FROM}" to site "${TO}" now; its site can change again once the move has ended`;
    expect(refused).toMatchObject({ reason: 'SiteMoveRefused', message: why });
    expect(await waitFor('the SiteMoveRefused Event', async () => events(name).find((e) => e.reason === 'SiteMoveRefused'))).toMatchObject({ type: 'Warning', message: why });
    // Set back: taken, and said so.
    kubectl(['label', 'bmh', name, '-n', NS, `${SITE_LABEL}=${TO}`, '--overwrite']);
    await waitFor('SiteLabelAccepted True', async () => condition(name, 'SiteLabelAccepted')?.status === 'True', { timeoutMs: 30_000 });
    openGate();

    const done: FleetProgress = await moving;
    expect(done.counts, JSON.stringify(done.hosts)).toMatchObject({ succeeded: 1, failed: 0, skipped: 0 });
    const atTo = await waitFor(`${name} moved to ${TO}`, async () => {
      const b = get();
      return atRest(b) && b.status!.provisioning!.ID !== fromNode && events(name).some((e) => e.reason === 'SiteMoved') ? b : undefined;
    }, { timeoutMs: 30_000 });
    const toNode = atTo.status!.provisioning!.ID;
    expect(atTo.status!.provisioning!.image?.url).toBe(image.url);
    expect(siteCondition(name)).toMatchObject({ status: 'True', reason: 'SiteReachable' });
    expect(events(name).find((e) => e.reason === 'SiteMoved')).toMatchObject({
      type: 'Normal',
      message: expect.stringContaining(`moved from site "${FROM}" to site "${TO}": Ironic node ${toNode} there, node ${fromNode} removed from site "${FROM}"`),
    });
    // The node is at TO's Ironic, active and out of maintenance, and no longer at FROM's.
    expect(await new IronicClient({ url: toIronic!.url }).getNode(toNode)).toMatchObject({ provision_state: 'active', maintenance: false, name: ironicNodeName(ref) });
    expect(await new IronicClient({ url: IRONIC_URL }).getNode(fromNode)).toBeUndefined();
    const move = { from: siteMoveFigures(proxies[FROM]!.requests.slice(sent.from)), to: siteMoveFigures(proxies[TO]!.requests.slice(sent.to)) };
    process.stderr.write(`[k8s sites test] the move's Ironic requests: ${JSON.stringify(move)}\n`);
    expect(move).toEqual({
      from: { deploys: 0, verbs: [], powerChanges: 0, nodeCreates: 0, maintenance: 1, nodeDeletes: 1 },
      to: { deploys: 0, verbs: ['adopt', 'manage'], powerChanges: 0, nodeCreates: 1, maintenance: 0, nodeDeletes: 0 },
    });

    // A label naming no configured site: refused, naming the accepted ones.
    kubectl(['label', 'bmh', name, '-n', NS, `${SITE_LABEL}=nowhere`, '--overwrite']);
    const invalid = await waitFor('the InvalidSpec Event', async () => events(name).find((e) => e.reason === 'InvalidSpec'), { timeoutMs: 30_000 });
    expect(invalid).toMatchObject({ type: 'Warning', message: expect.stringContaining(`metadata.labels["${SITE_LABEL}"]: "nowhere" is not a configured site; the sites are "default", "${SITE}", "${TO}"`) });
    expect(get().status!.provisioning!.ID).toBe(toNode);
    // A replay fixture of a BareMetalHost's move (its marker set by the validator): METALFLOW_RECORD_SITE_MOVE_K8S_FIXTURE=host-site-move-k8s.json.
    if (process.env.METALFLOW_RECORD_SITE_MOVE_K8S_FIXTURE) saveHistory(hostWorkflowId(ref), process.env.METALFLOW_RECORD_SITE_MOVE_K8S_FIXTURE);
  });
});

describe("node health of a site's hosts", () => {
  it("reads a host's Healthy from its own site's Ironic through the site's worker; with the site dark the host is Unknown/SiteUnreachable, not failed; back, the reading returns", { timeout: 120_000 }, async () => {
    const name = 'health';
    await toStarted;
    if (!toWorker || toWorker.exitCode !== null || toWorker.signalCode !== null) toWorker = suite.shim.startWorker(SITES, ['--site', TO]);
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'pw' }));
    const doc = hostDoc(name, fakeHostSpec(name, { automatedCleaningMode: 'disabled' }), { 'inspect.metal3.io': 'disabled' });
    apply({ ...doc, metadata: { ...doc.metadata, labels: { [SITE_LABEL]: TO } } });
    const registered = await waitFor(`${name} available at ${TO}`, async () => {
      const b = json(['get', 'bmh', name]) as MoverBmh;
      return b.status?.provisioning?.state === 'available' && b.status.operationalStatus === 'OK' ? b : undefined;
    }, { timeoutMs: 90_000, intervalMs: 300 });
    const node = registered.status!.provisioning!.ID;
    // Ironic's fake driver reports no health; a BMC's reading, as Ironic's power sync would cache it, written into
    // TO's Ironic's own database. The default site's Ironic has no node of that id.
    const db = join(REPO_ROOT, '.state', TO_STATE, 'ironic', 'ironic.sqlite');
    const setHealth = `import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
c.execute("UPDATE nodes SET health='Warning' WHERE uuid=?", (sys.argv[2],))`;
    execFileSync('python3', ['-c', setHealth, db, node]);
    expect((await new IronicClient({ url: toIronic!.url }).listNodeStates(['health'], '1.109')).map((n) => [n.uuid, n.health])).toContainEqual([node, 'Warning']);
    const healthy = () => condition(name, 'Healthy');
    // On the code before, the controller looked the node up in the default site's Ironic only: Healthy stayed Unknown.
    await waitFor('Healthy False/Warning from TO', async () => healthy()?.reason === 'Warning', { timeoutMs: 30_000, intervalMs: 300 });
    const read = await suite.client.workflow.getHandle(siteNodeHealthWorkflowId(TO)).fetchHistory();
    expect((read.events ?? []).map((e) => e.activityTaskScheduledEventAttributes?.taskQueue?.name).filter(Boolean)).toEqual([`site/${TO}`]);

    // TO goes dark: its worker SIGKILLed. Its host is reported as at a dark site, not as failed.
    toWorker.kill('SIGKILL');
    const dark = await waitFor('Healthy Unknown/SiteUnreachable', async () => (healthy()?.reason === 'SiteUnreachable' ? healthy() : undefined), { timeoutMs: 30_000, intervalMs: 300 });
    expect(dark).toMatchObject({ status: 'Unknown', message: `site unreachable: no worker of site "${TO}" took the node health read from task queue site/${TO} within 2 s (its worker: npm run worker -- --site ${TO})` });
    const b = json(['get', 'bmh', name]) as MoverBmh & { status: { conditions: Condition[] } };
    expect(b.status.operationalStatus).toBe('OK');
    expect(Object.fromEntries(b.status.conditions.map((c) => [c.type, `${c.status}/${c.reason}`]))).toMatchObject({ Manageable: 'True/Manageable', AvailableForProvisioning: 'True/Available' });

    // Back: the next reading replaces it (once the new process has loaded and polls).
    toWorker = suite.shim.startWorker(SITES, ['--site', TO]);
    await waitFor('Healthy False/Warning again', async () => healthy()?.reason === 'Warning', { timeoutMs: 90_000, intervalMs: 300 });
    expect(healthy()).toMatchObject({ status: 'False', message: '' });
  });
});
