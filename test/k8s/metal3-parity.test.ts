/**
 * Metal3 parity in Kubernetes mode (issue 16), on the real kube-apiserver,
 * Temporal and Ironic: what Ironic received from a worker whose Ironic
 * traffic goes through the recording proxy, and the Events on the object.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IRONIC_URL, SUSHY_URL } from '../support/env';
import { REPO_ROOT } from '../../config/env';
import { request } from 'undici';
import { IronicClient } from '../../clients/ironic/client';
import { startImageServer } from '../support/image-server';
import { uniq, waitFor } from '../support/harness';
import { isDeploy } from '../../bench/support/ironic-proxy';
import { startProxyProcess } from '../support/ironic-proxy-process';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-parity');
/** In a process of its own: this file's event loop stops in every kubectl call. */
let proxy: Awaited<ReturnType<typeof startProxyProcess>> | undefined;
beforeAll(async () => {
  proxy = await startProxyProcess(IRONIC_URL, join(mkdtempSync(join(tmpdir(), 'mf-parity-')), 'ironic-requests.jsonl'));
});
afterAll(() => proxy?.stop());
const TQ = uniq('tq-parity');
/** Prometheus endpoints of this file's controller and worker (issue 16 item 14). */
const CONTROLLER_METRICS_PORT = Number(process.env.TEST_CONTROLLER_METRICS_PORT ?? 22991);
const WORKER_METRICS_PORT = Number(process.env.TEST_WORKER_METRICS_PORT ?? 22992);
// A retry limit of 1: the retry test's one failed deploy reaches it.
useShimSuite(NS, TQ, { METALFLOW_CONTROLLER_METRICS_PORT: String(CONTROLLER_METRICS_PORT), METALFLOW_CONTROLLER_NODE_HEALTH_SECONDS: '2', METALFLOW_MAX_PROVISIONING_RETRIES: '1' }, () => ({
  IRONIC_URL: proxy!.url,
  METALFLOW_WORKER_METRICS_PORT: String(WORKER_METRICS_PORT),
}));

const json = (args: string[]) => JSON.parse(kubectl([...args, '-n', NS, '-o', 'json']).stdout);
const apply = (doc: Record<string, unknown>) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc) });
// Up to 5 minutes: the file's hosts come up together, beside the whole suite's load.
const waitState = (name: string, state: string) =>
  kubectl(['wait', '-n', NS, `--for=jsonpath={.status.provisioning.state}=${state}`, `bmh/${name}`, '--timeout=300s']);
const IMAGE = { url: 'http://127.0.0.1/images/ubuntu.qcow2', checksum: 'a'.repeat(64), checksumType: 'sha256', format: 'qcow2' };

/**
 * The Healthy test's host is applied before every other test and checked last: Ironic's power sync (every 30 s
 * on the test stack) reads its BMC's health while the other tests run, instead of the test waiting for it alone.
 */
const HEALTHY_HOST = 'healthy-host';
/**
 * The fake-hardware hosts the tests start from, applied with it: they register, inspect and provision side by
 * side while the tests before theirs run, instead of each test waiting for its own from the start.
 */
const FAKE_HOSTS: Record<string, Record<string, unknown>> = {
  'uid-host': { image: IMAGE },
  'cond-host': { image: IMAGE },
  'events-host': {},
  'bmo-events-host': { image: IMAGE },
  // Cleaning would wait for an agent too: the retry test's failed deploy is torn down without it.
  'retry-host': { automatedCleaningMode: 'disabled' },
};
beforeAll(() => {
  apply(secretDoc(`${HEALTHY_HOST}-bmc-secret`, { username: 'admin', password: 'password' }));
  apply(hostDoc(HEALTHY_HOST, {
    online: false,
    automatedCleaningMode: 'disabled',
    bmc: { address: `redfish+${SUSHY_URL}/redfish/v1/Systems/6d660000-0000-4000-8000-000000000006`, credentialsName: `${HEALTHY_HOST}-bmc-secret` },
  }, { 'inspect.metal3.io': 'disabled' }));
  for (const [name, over] of Object.entries(FAKE_HOSTS)) {
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'pw' }));
    apply(hostDoc(name, fakeHostSpec(name, over)));
  }
});

/** The config drive the worker sent with the node's deploy. */
function deployedConfigDrive(nodeId: string): { meta_data: Record<string, unknown> } {
  const deploys = proxy!.requests().filter((r) => isDeploy(r) && r.path === `/v1/nodes/${nodeId}/states/provision`);
  expect(deploys).toHaveLength(1);
  return (JSON.parse(deploys[0]!.body) as { configdrive: { meta_data: Record<string, unknown> } }).configdrive;
}

/**
 * A fake-hardware host provisioned once (applied before the tests) and only read afterwards, shared by the tests
 * that look at a plain provisioning (the config drive's uuid, the controller's and worker's metrics).
 */
const PROVISIONED_HOST = 'uid-host';
function provisioned(): string {
  waitState(PROVISIONED_HOST, 'provisioned');
  return PROVISIONED_HOST;
}

describe('Metal3 parity in Kubernetes mode', () => {
  it("writes the BareMetalHost's metadata.uid as the config drive's meta_data.uuid, as BMO does", async () => {
    const name = provisioned();
    const bmh = json(['get', 'bmh', name]);
    const nodeId: string = bmh.status.provisioning.ID;
    const meta = deployedConfigDrive(nodeId).meta_data;
    // CAPM3 labels the Node metal3.io/uuid={{ ds.meta_data.uuid }} and looks it up by the BMH's uid.
    expect(meta.uuid).toBe(bmh.metadata.uid);
    expect(meta.uuid).not.toBe(nodeId);
    expect(meta).toMatchObject({ 'metal3-namespace': NS, 'metal3-name': name, 'local-hostname': name });
  });
});

interface Condition { type: string; status: string; reason: string; lastTransitionTime: string; observedGeneration: number }
const conditions = (name: string): Record<string, Condition> =>
  Object.fromEntries((json(['get', 'bmh', name]).status.conditions as Condition[]).map((c) => [c.type, c]));

describe('Conditions as BMO computes them', () => {
  it('lets `kubectl wait --for=condition=Ready` see a provisioned host, and a power change keeps the transition times', async () => {
    const name = 'cond-host';
    kubectl(['wait', '-n', NS, '--for=condition=Ready', `bmh/${name}`, '--timeout=180s']);
    const provisioned = conditions(name);
    expect(Object.fromEntries(Object.values(provisioned).map((c) => [c.type, `${c.status}/${c.reason}`]))).toEqual({
      Manageable: 'True/Manageable',
      AvailableForProvisioning: 'False/NotAvailable',
      Provisioned: 'True/Provisioned',
      Ready: 'True/Provisioned',
      Progressing: 'False/NotProgressing',
      Healthy: 'Unknown/Unknown',
    });
    // Manageable turned True while the host was inspected, before Ready did.
    expect(provisioned.Manageable!.lastTransitionTime <= provisioned.Ready!.lastTransitionTime).toBe(true);

    kubectl(['patch', 'bmh', name, '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { online: false } })]);
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.poweredOn}=false', `bmh/${name}`, '--timeout=120s']);
    const off = conditions(name);
    expect(off.Ready).toMatchObject({ status: 'True', reason: 'Provisioned', lastTransitionTime: provisioned.Ready!.lastTransitionTime });
    // Written again after the spec change (online: false bumped the object's generation).
    expect(off.Ready!.observedGeneration).toBeGreaterThan(provisioned.Ready!.observedGeneration);
    expect(off.Manageable).toMatchObject({ status: 'True', lastTransitionTime: provisioned.Manageable!.lastTransitionTime });
  });
});

const events = (name: string): { reason: string; message: string }[] =>
  JSON.parse(kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']).stdout).items;

describe('Events of a host that is registered once', () => {
  it('has no "unmanaged → registering" for a host never unmanaged, and one Registered (BMO\'s name for EnrollSucceeded) through spec changes', { timeout: 400_000 }, async () => {
    const name = 'events-host';
    waitState(name, 'available');
    kubectl(['patch', 'bmh', name, '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { image: IMAGE, description: 'changed' } })]);
    waitState(name, 'provisioned');
    kubectl(['patch', 'bmh', name, '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { online: false } })]);
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.poweredOn}=false', `bmh/${name}`, '--timeout=120s']);
    // A change the node's registration depends on (CAPM3 sets the cleaning mode on a host it provisions).
    kubectl(['patch', 'bmh', name, '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { automatedCleaningMode: 'disabled' } })]);
    // The registration's Event, whatever it is called: before, a second EnrollSucceeded (Registered in Kubernetes).
    const registeredAgain = (e: { reason: string; message: string }) => /^(RegistrationUpdated|EnrollSucceeded|Registered)$/.test(e.reason) && /state provisioned/.test(e.message);
    const updated = await waitFor('registered again', async () => events(name).find(registeredAgain), { timeoutMs: 120_000 });
    expect(updated.reason).toBe('RegistrationUpdated');
    const all = events(name);
    expect(all.filter((e) => /unmanaged/.test(e.message))).toEqual([]);
    expect(all.filter((e) => e.reason === 'StateChanged').map((e) => e.message)).toContain('provisioning state none → registering');
    expect(all.filter((e) => e.reason === 'Registered')).toHaveLength(1);
    expect(all.filter((e) => e.reason === 'EnrollSucceeded')).toEqual([]);
  });
});

interface KubeEvent { reason: string; message: string; type: string; source?: { component?: string }; reportingComponent?: string; reportingInstance?: string }

describe("Events as BMO's", () => {
  it("a host's lifecycle writes BMO's reasons and component, and metalflow's StateChanged for the transitions BMO has no Event for", { timeout: 400_000 }, async () => {
    const name = 'bmo-events-host';
    waitState(name, 'provisioned');
    kubectl(['patch', 'bmh', name, '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { online: false } })]);
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.poweredOn}=false', `bmh/${name}`, '--timeout=120s']);
    kubectl(['patch', 'bmh', name, '-n', NS, '--type=json', '-p', '[{"op":"remove","path":"/spec/image"}]']);
    waitState(name, 'available');
    const all = await waitFor('the DeprovisioningComplete Event', async () => {
      const items = events(name) as KubeEvent[];
      return items.some((e) => e.reason === 'DeprovisioningComplete') ? items : undefined;
    }, { timeoutMs: 60_000 });
    const reasons = new Set(all.map((e) => e.reason));
    for (const r of ['Registered', 'BMCAccessValidated', 'InspectionStarted', 'InspectionComplete', 'ProvisioningStarted', 'ProvisioningComplete', 'PowerOff', 'DeprovisioningStarted', 'DeprovisioningComplete', 'StateChanged']) {
      expect(reasons, r).toContain(r);
    }
    for (const r of ['EnrollSucceeded', 'InspectSucceeded', 'ProvisionSucceeded', 'DeprovisionSucceeded', 'PowerSucceeded']) expect(reasons, r).not.toContain(r);
    // A Started Event stands for the transition's StateChanged (same message): one Event, not two.
    expect(all.filter((e) => e.reason === 'StateChanged').map((e) => e.message)).not.toContain('provisioning state available → provisioning');
    expect(all.filter((e) => e.reason === 'ProvisioningStarted').map((e) => e.message)).toContain('provisioning state available → provisioning');
    for (const e of all) {
      expect(e.source?.component).toBe('metal3-baremetal-controller');
      expect(e.reportingComponent).toBe('metal3.io/baremetal-controller');
      expect(e.reportingInstance).toMatch(/^metalflow/);
    }
  });
});

describe('Metal3 manifests as Go clients write them', () => {
  it('applies (strict field validation) with taints, networkInterfaces and an empty bmc, and the host is unmanaged', async () => {
    const name = 'go-client-host';
    const spec = {
      online: false,
      bmc: { address: '', credentialsName: '' },
      taints: [{ key: 'example.com/dedicated', value: 'db', effect: 'NoSchedule' }],
      networkInterfaces: [{ macAddress: '52:54:00:00:00:01', switchPort: 'eth1/1' }],
    };
    const applied = kubectl(['apply', '--validate=strict', '-n', NS, '-f', '-'], { input: JSON.stringify(hostDoc(name, spec)) });
    expect(applied.stdout).toMatch(/created/);
    waitState(name, 'unmanaged');
    const bmh = json(['get', 'bmh', name]);
    expect(bmh.spec.taints).toEqual(spec.taints);
    expect(bmh.status.operationalStatus).toBe('OK');
    expect(events(name).filter((e) => e.reason === 'InvalidSpec')).toEqual([]);
    const ignored = await waitFor('the FieldIgnored Event', async () => events(name).find((e) => e.reason === 'FieldIgnored'), { timeoutMs: 60_000 });
    expect(ignored.message).toMatch(/spec\.taints is accepted but ignored: .*; spec\.networkInterfaces is accepted but ignored/);
  });
});

/** One sample's value from a Prometheus text exposition, or undefined. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const body = line.slice(name.length + 1, line.indexOf('}'));
    if (want.every((w) => body.split(',').includes(w))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

/** Every name a Prometheus text exposition offers: sample names, and the families its TYPE lines declare (a family with no sample yet, e.g. an error counter). */
function exposedNames(text: string): string[] {
  const names: string[] = [];
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\w+)/.exec(line);
    if (type) names.push(type[1]!, ...(type[2] === 'histogram' ? ['_bucket', '_sum', '_count'].map((s) => type[1]! + s) : []));
    else if (line && !line.startsWith('#')) names.push(/^[^{ ]+/.exec(line)![0]);
  }
  return names;
}

const PROMQL_WORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan']);

/** The metric names in a PromQL expression: identifiers outside label matchers, grouping lists, ranges and strings, not called as functions. */
function promqlMetricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
    .replace(/\$\w+/g, '');
  return [...bare.matchAll(/([A-Za-z_:][\w:]*)\s*(\()?/g)].filter((m) => !m[2] && !PROMQL_WORDS.has(m[1]!.toLowerCase())).map((m) => m[1]!);
}

describe("Metal3's Prometheus series", () => {
  it('the controller exports metal3_* from what it watched, the worker the Temporal SDK metrics', async () => {
    const name = provisioned();
    const scrape = async (port: number) => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const host = { namespace: NS, host: name };
    // The status with the deploy's end reaches the controller's watch a moment after the state does.
    const text = await waitFor('the provision duration observed', async () => {
      const t = await scrape(CONTROLLER_METRICS_PORT);
      return sample(t, 'metal3_operation_provision_duration_seconds_count', host) === 1 ? t : undefined;
    });
    expect(sample(text, 'metal3_operation_provision_duration_seconds_bucket', { ...host, le: '30' })).toBe(1);
    expect(sample(text, 'metal3_operation_inspect_duration_seconds_count', host)).toBe(1);
    expect(sample(text, 'metal3_provisioning_state_change_total', { prev_state: 'provisioning', new_state: 'provisioned' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'metal3_reconcile_total', host)).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/^# TYPE metal3_host_error_total counter$/m);
    const worker = await scrape(WORKER_METRICS_PORT);
    expect(worker).toMatch(new RegExp(`^temporal_\\w+\\{[^}]*task_queue="${TQ}"`, 'm'));
  });

  it("counts a credentials Secret missing, invalid and updated as BMO's metal3_credentials_* do", async () => {
    const name = 'metrics-creds';
    // A kept-alive socket the server closes as it is reused fails the fetch ("other side closed"): asked again once.
    const scrapeOnce = async () => (await fetch(`http://127.0.0.1:${CONTROLLER_METRICS_PORT}/metrics`)).text();
    const scrape = async () => scrapeOnce().catch(() => scrapeOnce());
    const counter = (text: string, series: string) => Number(/^(\S+) (\S+)$/m.exec(text.split('\n').find((l) => l.startsWith(`${series} `)) ?? '')?.[2] ?? NaN);
    const before = await scrape();
    const base = (series: string) => counter(before, series);
    expect(base('metal3_credentials_missing_total')).toBeGreaterThanOrEqual(0);
    const grown = (series: string, by: number) =>
      waitFor(`${series} grown by ${by}`, async () => (counter(await scrape(), series) >= base(series) + by ? true : undefined), { timeoutMs: 120_000 });
    // The host first, its Secret nowhere: the controller's Secret watch finds it missing.
    apply(hostDoc(name, fakeHostSpec(name, {})));
    await grown('metal3_credentials_missing_total', 1);
    // Then a Secret without a password: tried (a new version) and found invalid by the registration.
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin' }));
    await grown('metal3_credentials_invalid_total', 1);
    await grown('metal3_credentials_updated_total', 1);
    // Fixed: another version tried, and the host registers.
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'pw' }));
    await grown('metal3_credentials_updated_total', 2);
    waitState(name, 'available');
    const text = await scrape();
    expect(counter(text, 'metal3_credentials_missing_total')).toBe(base('metal3_credentials_missing_total') + 1);
    expect(counter(text, 'metal3_host_registration_required_total')).toBeGreaterThanOrEqual(base('metal3_host_registration_required_total') + 1);
    // Series metalflow never reaches are there at 0, so dashboards find them.
    expect(counter(text, 'metal3_provisioner_not_ready_total')).toBe(0);
  });

  it("every metric the docs' Grafana dashboard queries is in this controller's or worker's scrape", async () => {
    // A connection of its own, closed after: a kept-alive one the server drops would fail the next test's scrape.
    const scrape = async (port: number) => (await request(`http://127.0.0.1:${port}/metrics`, { reset: true })).body.text();
    const exposed = new Set([...exposedNames(await scrape(CONTROLLER_METRICS_PORT)), ...exposedNames(await scrape(WORKER_METRICS_PORT))]);
    const dashboard = JSON.parse(readFileSync(join(REPO_ROOT, 'docs', 'grafana-dashboard.json'), 'utf8')) as { panels: Array<{ targets?: Array<{ expr: string }> }> };
    const queried = [...new Set(dashboard.panels.flatMap((p) => (p.targets ?? []).flatMap((t) => promqlMetricNames(t.expr))))];
    expect(queried.length).toBeGreaterThan(15);
    expect(queried.filter((n) => !exposed.has(n))).toEqual([]);
  });
});

describe('the provisioning retry limit, reset as Metal3 users reset it', () => {
  it('a host stopped at the limit provisions again once status.provisioningFailCount is set lower on the object', { timeout: 400_000 }, async () => {
    const name = 'retry-host';
    const ironic = new IronicClient({ url: IRONIC_URL });
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=300s']);
    const nodeId: string = json(['get', 'bmh', name]).status.provisioning.ID;
    // A fake-hardware node switched to the direct deploy waits for an agent that never comes; aborted, Ironic says `deploy failed`.
    await ironic.patchNode(nodeId, [{ op: 'replace', path: '/deploy_interface', value: 'direct' }]);
    const deployWaits = () => waitFor('the deploy waiting for its agent', async () => (await ironic.getNode(nodeId))?.provision_state === 'wait call-back', { timeoutMs: 180_000 });
    // Ironic's direct deploy checks that the image URL answers before it boots the agent.
    const images = await startImageServer({ '/retry.qcow2': { body: Buffer.from('metalflow retry test image') } });
    kubectl(['patch', 'bmh', name, '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { image: { ...IMAGE, url: images.url('/retry.qcow2') } } })]);
    await deployWaits();
    await ironic.abortProvisioning(nodeId);
    const held = await waitFor('the retry limit', async () => {
      const st = json(['get', 'bmh', name]).status;
      return st.provisioning.state === 'available' && /retry limit \(1\) reached/.test(st.errorMessage) ? st : undefined;
    }, { timeoutMs: 180_000 });
    expect(held).toMatchObject({ operationalStatus: 'error', errorType: 'provisioning error', provisioningFailCount: 1 });
    expect(held.errorMessage).toBe('provisioning failed 1 times, retry limit (1) reached; change image or reset provisioningFailCount to retry');

    // What the message says, done as BMO's users do it: the status edited on the object.
    kubectl(['patch', 'bmh', name, '-n', NS, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { provisioningFailCount: 0 } })]);
    await deployWaits();
    const retrying = json(['get', 'bmh', name]).status;
    expect(retrying.provisioning.state).toBe('provisioning');
    expect(retrying.provisioningFailCount).toBe(0);
    await ironic.abortProvisioning(nodeId);
    await waitFor('the retry limit again', async () => (/retry limit/.test(json(['get', 'bmh', name]).status.errorMessage) ? true : undefined), { timeoutMs: 180_000 });
    kubectl(['delete', 'bmh', name, '-n', NS, '--wait=true', '--timeout=180s']);
    await images.close();
  });
});

describe("Healthy from Ironic's node health (its host applied before the other tests)", () => {
  it("turns True once Ironic's power sync has read the BMC's health (Redfish), and stays through the worker's status writes", { timeout: 300_000 }, async () => {
    const name = HEALTHY_HOST;
    waitState(name, 'available');
    // Ironic's power sync (every 30 s on the test stack) caches sushy's Status.Health "OK" on the node.
    kubectl(['wait', '-n', NS, '--for=condition=Healthy', `bmh/${name}`, '--timeout=180s']);
    expect(conditions(name).Healthy).toMatchObject({ status: 'True', reason: 'Healthy' });
    // BMO's status.hardwareProfile: the profile the spec picks (none given: unknown).
    expect(json(['get', 'bmh', name]).status.hardwareProfile).toBe('unknown');
    // The worker publishes the power change; Healthy is kept through it (model/conditions.ts).
    kubectl(['patch', 'bmh', name, '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { online: true } })]);
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.poweredOn}=true', `bmh/${name}`, '--timeout=120s']);
    expect(conditions(name).Healthy).toMatchObject({ status: 'True', reason: 'Healthy' });
    // Not deleted: the file ends here, and its cleanup puts the node in maintenance before deleting it, without the
    // Redfish power off (and its PBKDF2-hashed sessions in Ironic) a delete of the host would cost.
  });
});
