/**
 * Hosts BMO left in its other states (test/fixtures/bmo-takeover/states.json,
 * each status written as BMO's source writes it, see the fixtures' README):
 * externally provisioned, detached, power management error, registration
 * error. The nodes are made from the snapshot's with Ironic's own verbs
 * (`manage`, `adopt`); the
 * detached host has none (BMO deleted it). Counted at a recording proxy in
 * front of the worker's Ironic: the takeover sends no destructive request.
 * BMO's Lease is still held and fresh here: the controller runs with the
 * override, METALFLOW_BMO_CHECK=off.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import type { IronicNode } from '../../clients/ironic/types';
import { hostWorkflowId, ironicNodeName } from '../../model/host-ref';
import { withoutNulls } from '../../model/metal3-status';
import { hostViewQuery, type HostView } from '../../contracts/host';
import { IRONIC_URL } from '../support/env';
import { randomMac, uniq, waitFor } from '../support/harness';
import { startProxyProcess } from '../support/ironic-proxy-process';
import { kubectl } from './kube-harness';
import { BMO_FIXTURES, bmoFleet, bmoLease, drives, type Bmh, type FixtureNode } from './bmo-fleet';
import { useShimSuite } from './shim-harness';

interface Case {
  host: Bmh;
  node: FixtureNode | null;
}
const CASES = (JSON.parse(readFileSync(join(BMO_FIXTURES, 'states.json'), 'utf8')) as { items: Case[] }).items;

const NS = uniq('mf-bmos');
let proxy: Awaited<ReturnType<typeof startProxyProcess>> | undefined;
beforeAll(async () => {
  proxy = await startProxyProcess(IRONIC_URL, join(mkdtempSync(join(tmpdir(), 'mf-bmos-')), 'ironic-requests.jsonl'));
});
afterAll(() => {
  proxy?.stop();
  // A controller with the default settings reads BMO's Lease in every namespace: none may outlive this file.
  kubectl(['delete', 'lease', 'baremetal-operator', '-n', NS, '--ignore-not-found'], { check: false });
  fleet.releaseFinalizers();
});
const suite = useShimSuite(NS, uniq('tq-bmos'), {}, () => ({ IRONIC_URL: proxy!.url }));
const ironic = new IronicClient({ url: IRONIC_URL });
const fleet = bmoFleet({ ns: NS, ironic });

const eventsOf = (name: string): { reason: string; message: string; type: string }[] =>
  (JSON.parse(kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']).stdout) as { items: { reason: string; message: string; type: string }[] }).items;
const view = (name: string): Promise<HostView | undefined> =>
  suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery).catch(() => undefined);

/** BMO's node in the case's state, reached by Ironic's verbs (none: BMO deleted it). */
async function nodeFor(c: Case, mac: string): Promise<IronicNode | undefined> {
  return c.node ? fleet.recreateNode(c.host.metadata.name, c.node, mac) : undefined;
}

const loaded = new Map<string, { before: Bmh; node?: IronicNode }>();
let mark = 0;

describe("hosts BMO left in its other states, taken over", { timeout: 600_000 }, () => {
  beforeAll(async () => {
    suite.shim.running('controller')?.kill('SIGKILL');
    const macs = new Map(CASES.map((c) => [c.host.metadata.name, randomMac()] as const));
    const nodes = new Map(await Promise.all(CASES.map(async (c) => [c.host.metadata.name, await nodeFor(c, macs.get(c.host.metadata.name)!)] as const)));
    for (const c of CASES) {
      const name = c.host.metadata.name;
      const node = nodes.get(name);
      const version = fleet.loadSecrets(c.host);
      // The detached host's ID names the node BMO deleted.
      const before = fleet.loadHost(c.host, node?.uuid ?? c.host.status.provisioning.ID, macs.get(name)!, version);
      loaded.set(name, { before, ...(node ? { node } : {}) });
    }
    kubectl(['create', '-f', '-'], { input: JSON.stringify(bmoLease(NS, 'bmo-7c9d_5f1e')) });
    mark = proxy!.requests().length;
    suite.shim.startController({ METALFLOW_BMO_CHECK: 'off' });
  }, 600_000);

  it('adopts each without a destructive request, beside a fresh BMO Lease with METALFLOW_BMO_CHECK=off', async () => {
    for (const c of CASES) {
      const name = c.host.metadata.name;
      await waitFor(`${name} adopted`, async () => {
        const v = await view(name);
        return v && v.operations.length > 0 && v.operations.every((o) => o.outcome === 'succeeded') && !v.currentOperation ? v : undefined;
      }, { timeoutMs: 240_000 });
      await waitFor(`${name}: WorkflowReadopted`, async () => eventsOf(name).some((e) => e.reason === 'WorkflowReadopted') || undefined, { timeoutMs: 60_000 });
      expect(eventsOf(name).filter((e) => e.reason === 'BareMetalOperatorActive'), name).toEqual([]);
    }
    const sent = proxy!.requests().slice(mark);
    expect(sent.filter(drives).map((r) => `${r.method} ${r.path} ${r.body}`)).toEqual([]);
    // No node created (the detached host's included) and none deleted.
    expect(sent.filter((r) => (r.method === 'POST' && /^\/v1\/nodes\/?$/.test(r.path)) || r.method === 'DELETE').map((r) => `${r.method} ${r.path}`)).toEqual([]);
  });

  it('externally provisioned: stays so, its node active and on, nothing deployed', async () => {
    const { before, node } = loaded.get('x-ext')!;
    const v = (await view('x-ext'))!;
    expect(v.operations.map((o) => o.kind)).toEqual(['enroll']);
    expect(v.status).toMatchObject({ operationalStatus: 'OK', poweredOn: true, provisioning: { state: 'externally provisioned', ID: node!.uuid } });
    expect(fleet.getHost('x-ext').status.provisioning.state).toBe('externally provisioned');
    expect(fleet.getHost('x-ext').status.operationHistory).toEqual(withoutNulls(before.status.operationHistory));
    expect(await ironic.getNode(node!.uuid)).toMatchObject({ provision_state: 'active', power_state: 'power on' });
  });

  it('power management error and registration error: cleared by the registration that succeeds, as BMO, with no power request', async () => {
    for (const [name, state, nodeState] of [['x-power-error', 'provisioned', 'active'], ['x-registration-error', 'available', 'manageable']] as const) {
      const { before, node } = loaded.get(name)!;
      expect(before.status.errorCount, name).toBeGreaterThan(0);
      const v = (await view(name))!;
      expect(v.operations.map((o) => o.kind), name).toEqual(['enroll']);
      expect(v.status, name).toMatchObject({ operationalStatus: 'OK', errorType: '', errorCount: 0, provisioning: { state } });
      expect(fleet.getHost(name).status, name).toMatchObject({ operationalStatus: 'OK', errorCount: 0, provisioning: { state } });
      expect(await ironic.getNode(node!.uuid), name).toMatchObject({ provision_state: nodeState, power_state: 'power on' });
    }
  });

  it('detached: stays detached with no node; once the annotation goes, it is attached by adoption, never deployed', async () => {
    const name = 'x-detached';
    const v = (await view(name))!;
    expect(v.status).toMatchObject({ operationalStatus: 'detached', provisioning: { state: 'provisioned' } });
    expect(fleet.getHost(name).status.operationalStatus).toBe('detached');
    expect(await ironic.getNode(ironicNodeName({ namespace: NS, name }))).toBeUndefined();

    const from = proxy!.requests().length;
    kubectl(['annotate', 'bmh', name, '-n', NS, 'baremetalhost.metal3.io/detached-']);
    const attached = await waitFor(`${name} attached`, async () => {
      const now = await view(name);
      return now?.status.operationalStatus === 'OK' && !now.currentOperation ? now : undefined;
    }, { timeoutMs: 180_000 });
    expect(attached.status.provisioning.state).toBe('provisioned');
    const node = await ironic.getNode(attached.status.provisioning.ID);
    expect(node).toMatchObject({ provision_state: 'active', name: ironicNodeName({ namespace: NS, name }) });
    // Registered and adopted; powered on as spec.online wants (a new fake node's power is unknown, a real one's
    // already on): no deploy, clean, power off or reboot.
    const verbs = proxy!.requests().slice(from).filter(drives).map((r) => `${r.method} ${r.path.replace(node!.uuid, '<node>')} ${r.body}`);
    expect(verbs.filter((r) => !/"target":\s*"(manage|adopt|power on)"/.test(r))).toEqual([]);
    expect(verbs.some((r) => /"target":\s*"adopt"/.test(r))).toBe(true);
  });
});
