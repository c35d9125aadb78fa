/**
 * What an idle or held host costs the controller's peers, on the real
 * kube-apiserver, Temporal and Ironic: a host's firmware read from Ironic with
 * no workflow started, a pause (and its change) sent without a query, a delete
 * held by the paused annotation that asks Temporal nothing more once handed
 * over, a deleted host's metric series gone.
 * The controller counts its own Temporal calls (metalflow_controller_temporal_calls_total).
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery } from '../../contracts/host';
import { firmwareInventoryWorkflowId } from '../../contracts/firmware-inventory';
import { uniq, waitFor } from '../support/harness';
import { unusedPort } from '../support/ports';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-ctl-load');
const taskQueue = uniq('tq-ctl-load');
const controllerEnv: Record<string, string> = {};
// Registered before the suite's own hook: the controller starts with the port.
beforeAll(async () => {
  controllerEnv.METALFLOW_CONTROLLER_METRICS_PORT = String(await unusedPort());
});
const suite = useShimSuite(NS, taskQueue, controllerEnv);

const apply = (doc: Record<string, unknown>) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc) });
const scrape = async (): Promise<string> => (await fetch(`http://127.0.0.1:${controllerEnv.METALFLOW_CONTROLLER_METRICS_PORT}/metrics`)).text();
/** The sum of a series' samples whose labels contain every `labels` pair. */
const sum = (text: string, name: string, labels: Record<string, string> = {}): number =>
  text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .filter((l) => Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);

describe('the controller at rest', () => {
  it("reads a host's firmware from Ironic without a workflow, pauses without a query, asks nothing more of a held delete, and drops a deleted host's series", async () => {
    const name = 'idle-0';
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'pw' }));
    apply(hostDoc(name, fakeHostSpec(name)));
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=180s']);

    // The HostFirmwareSettings' status is written from a read of Ironic: no firmware workflow ran for it.
    await waitFor('the HostFirmwareSettings status', async () => {
      const r = kubectl(['get', 'hostfirmwaresettings', name, '-n', NS, '-o', 'jsonpath={.status.conditions[*].type}'], { check: false });
      return r.status === 0 && r.stdout.includes('Valid');
    }, { timeoutMs: 120_000 });
    await expect(suite.client.workflow.getHandle(firmwareInventoryWorkflowId(NS, name)).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
    expect(sum(await scrape(), 'metalflow_controller_temporal_calls_total', { call: 'start' })).toBe(0);

    const handle = suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name }));
    // A pause and its change go to the workflow without a query first: the controller knows what it last sent
    // (a query meeting a local activity is docs/adr/0006-local-activity-heartbeat.md's replay fault).
    const pausedQueries = (text: string) => sum(text, 'metalflow_controller_temporal_calls_total', { call: 'query' });
    const pausedUpdates = (text: string) => sum(text, 'metalflow_controller_temporal_calls_total', { call: 'update', name: 'setPaused' });
    const atRest = await scrape();
    kubectl(['annotate', 'bmh', name, '-n', NS, 'baremetalhost.metal3.io/paused=first']);
    await waitFor('the workflow paused', async () => (await handle.query(hostViewQuery)).paused?.reason === 'first');
    kubectl(['annotate', 'bmh', name, '-n', NS, 'baremetalhost.metal3.io/paused=test', '--overwrite']);
    await waitFor('the pause reason changed', async () => (await handle.query(hostViewQuery)).paused?.reason === 'test');
    await waitFor('both pause updates counted', async () => pausedUpdates(await scrape()) - pausedUpdates(atRest) >= 2);
    const paused = await scrape();
    expect(pausedUpdates(paused) - pausedUpdates(atRest)).toBe(2);
    expect(pausedQueries(paused)).toBe(pausedQueries(atRest));
    kubectl(['delete', 'bmh', name, '-n', NS, '--wait=false']);
    await waitFor('the delete handed over', async () => (await handle.query(hostViewQuery)).deleteRequested);
    // The reconcile that sent it may still be running: its count comes once it ends.
    const calls = async () => (await scrape()).split('\n').filter((l) => /^(metalflow_controller_temporal_calls_total|metal3_reconcile_total)\{/.test(l)).join('\n');
    let before = await calls();
    await waitFor('the reconcile that sent the delete to end', async () => {
      const now = await calls();
      const settled = now.includes('name="deleteHost"') && now === before;
      before = now;
      return settled || undefined;
    }, { intervalMs: 1000 });
    const queries = sum(before, 'metalflow_controller_temporal_calls_total', { call: 'query' });
    // Each change of the object is a reconcile of the held delete; none of them asks the workflow anything.
    for (let i = 1; i <= 3; i++) {
      const reconciles = sum(await scrape(), 'metal3_reconcile_total', { host: name });
      kubectl(['annotate', 'bmh', name, '-n', NS, `test.metalflow.io/poke=${i}`, '--overwrite']);
      await waitFor(`reconcile after poke ${i}`, async () => sum(await scrape(), 'metal3_reconcile_total', { host: name }) > reconciles);
    }
    expect(sum(await scrape(), 'metalflow_controller_temporal_calls_total', { call: 'query' })).toBe(queries);
    expect((await handle.describe()).status.name).toBe('RUNNING');

    kubectl(['annotate', 'bmh', name, '-n', NS, 'baremetalhost.metal3.io/paused-']);
    kubectl(['wait', '-n', NS, '--for=delete', `bmh/${name}`, '--timeout=120s']);
    expect((await handle.describe()).status.name).toBe('COMPLETED');
    await waitFor("the deleted host's series removed", async () => !(await scrape()).includes(`host="${name}"`));
  });
});
