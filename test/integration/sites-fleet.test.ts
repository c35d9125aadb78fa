/**
 * A fleet operation over sites (docs/fleet-operations.md, docs/sites.md) on
 * the real Temporal and Ironic of the test stack: hosts of three sites (the
 * default one, served by the harness's worker, and two with site workers of
 * their own on their own task queues, as in sites.test.ts) powered off by one
 * fleet operation with at most 2 hosts of a site in flight. The cap is read
 * from the hosts' own operation records; the selection by site from what the
 * fleet selected, with a host of a fourth site in the same namespace left out.
 */
import type { Worker } from '@temporalio/worker';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { HostRef } from '../../model/host';
import { DEFAULT_SITE, siteTaskQueue } from '../../model/site';
import { createSiteWorker } from '../../workers/site-worker';
import { randomMac, startHarness, uniq, type Harness } from '../support/harness';
import { hostSiteAttribute } from '../../control/host-list';
import { hostWorkflowId } from '../../model/host-ref';
import { callApi, serveApi } from '../support/api-client';
import { fleetEnded, peakOverlap, startFleet, waitForFleet, waitForHost } from '../support/fleet-hosts';
import { fleetWorkflowId } from '../../contracts/fleet';

const A = uniq('a');
const B = uniq('b');
/** Configured, with no worker: its one host has no BMC, so it needs none. */
const C = uniq('c');
const PER_SITE = 2;

let h: Harness;
let api: { app: FastifyInstance; base: string };
const siteWorkers: Array<{ worker: Worker; running: Promise<void> }> = [];

beforeAll(async () => {
  h = await startHarness({ sites: [A, B, C] });
  for (const site of [A, B]) {
    const worker = await createSiteWorker({ connection: h.nativeConnection, namespace: 'default', taskQueue: siteTaskQueue(site), ironic: h.ironic, secrets: h.secrets, poll: { initialMs: 100, factor: 1.5, maxMs: 1000 } });
    siteWorkers.push({ worker, running: worker.run() });
  }
  api = await serveApi(h.hosts);
}, 120_000);

afterAll(async () => {
  await api?.app.close();
  for (const w of siteWorkers) w.worker.shutdown();
  await Promise.all(siteWorkers.map((w) => w.running));
  await h?.close();
});

async function putHost(ref: HostRef, site: string, bmc = true): Promise<void> {
  const res = await callApi(api.base, 'PUT', `/v1/namespaces/${ref.namespace}/hosts/${ref.name}`, {
    metadata: { labels: { role: 'worker' } },
    spec: { ...(bmc ? { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` } } : {}), bootMACAddress: randomMac(), online: true, inspectionMode: 'disabled', automatedCleaningMode: 'disabled', ...(site !== DEFAULT_SITE ? { site } : {}) },
    ...(bmc ? { credentials: { username: 'admin', password: 'pw' } } : {}),
  });
  expect(res.status, res.text).toBe(201);
}

describe('fleet operations by site', { timeout: 300_000 }, () => {
  it(`selects by site and never has more than ${PER_SITE} hosts of a site in flight, while the other sites go on`, async () => {
    // Its own namespace per attempt (a retry's hosts are new ones).
    const NS = uniq('site-fleet');
    const sites = [DEFAULT_SITE, A, B];
    const hosts = sites.flatMap((site, s) => Array.from({ length: 4 }, (_, i) => ({ site, ref: { namespace: NS, name: `s${s}-h${i}` } })));
    const other = { namespace: NS, name: 'other-site' };
    await Promise.all([...hosts.map((x) => putHost(x.ref, x.site)), putHost(other, C, false)]);
    await Promise.all(hosts.map((x) => waitForHost(h, x.ref, (v) => v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation, 'available and on')));
    const siteOf = new Map(hosts.map((x) => [x.ref.name, x.site]));
    // Each host's workflow indexes its site, what the selection's visibility query reads.
    const indexed = await Promise.all(hosts.map(async (x) => hostSiteAttribute((await h.client.workflow.getHandle(hostWorkflowId(x.ref)).describe()).searchAttributes)));
    expect(indexed).toEqual(hosts.map((x) => x.site));

    // A dry run of one site selects that site's hosts only; of the fourth site, its one host (no BMC, no worker).
    const dry = await startFleet(api.base, { name: uniq('dry'), operation: { kind: 'powerOff' }, selector: { namespace: NS, sites: [A] }, dryRun: true });
    const dryDone = await waitForFleet(api.base, dry.name, fleetEnded, 'dry run ended');
    expect(dryDone.selection!.hosts.map((x) => [x.ref.name, x.site])).toEqual(hosts.filter((x) => x.site === A).map((x) => [x.ref.name, A]));
    const dryC = await startFleet(api.base, { name: uniq('dry'), operation: { kind: 'powerOff' }, selector: { namespace: NS, sites: [C] }, dryRun: true });
    expect((await waitForFleet(api.base, dryC.name, fleetEnded, 'dry run ended')).selection!.hosts.map((x) => x.ref.name)).toEqual([other.name]);

    const name = uniq('off');
    const fleetStart = new Date().toISOString();
    // No maxConcurrent: the sites' caps are the only limit, so all three sites run at once.
    await startFleet(api.base, { name, operation: { kind: 'powerOff', mode: 'hard' }, selector: { namespace: NS, sites }, maxConcurrentPerSite: PER_SITE });
    const done = await waitForFleet(api.base, name, fleetEnded, 'ended');
    expect(done.phase).toBe('completed');
    expect(done.counts).toMatchObject({ succeeded: 12, failed: 0, skipped: 0 });
    // The fourth site's host is in the namespace, but not of a named site.
    expect(done.hosts.map((x) => x.ref.name).sort()).toEqual(hosts.map((x) => x.ref.name).sort());
    expect(done.selection!.hosts.every((x) => x.site === siteOf.get(x.ref.name))).toBe(true);
    expect(done.limits.maxConcurrentPerSite).toBe(PER_SITE);
    expect(done.sites).toEqual(Object.fromEntries(sites.map((s) => [s, expect.objectContaining({ succeeded: 4, inFlight: 0, pending: 0 })])));

    // From the hosts' own records: one power-off each, at most PER_SITE of a site at once, more than that across sites.
    const offs = await Promise.all(
      hosts.map(async (x) => ({ site: x.site, ops: (await h.hosts.get(x.ref)).operations.filter((o) => o.kind === 'power' && o.startedAt >= fleetStart) })),
    );
    expect(offs.map((r) => r.ops.length)).toEqual(hosts.map(() => 1));
    const interval = (r: (typeof offs)[number]) => ({ start: r.ops[0]!.startedAt, end: r.ops[0]!.endedAt! });
    const peaks = Object.fromEntries(sites.map((s) => [s, peakOverlap(offs.filter((r) => r.site === s).map(interval))]));
    expect(peaks).toEqual(Object.fromEntries(sites.map((s) => [s, PER_SITE])));
    expect(peakOverlap(offs.map(interval))).toBeGreaterThan(PER_SITE);
    expect((await h.hosts.get(other)).operations).toEqual([]);
  });

  it('refuses a site that is not configured, naming it and the accepted ones, from the API and from the temporal CLI path', async () => {
    const accepted = `the sites are "default", "${A}", "${B}", "${C}"`;
    const res = await callApi(api.base, 'POST', '/v1/fleet-operations', { name: uniq('nosite'), operation: { kind: 'powerOff' }, selector: { sites: [A, 'nowhere'] } });
    expect(res.status).toBe(400);
    expect(res.json.message).toBe(`selector.sites[1]: "nowhere" is not a configured site; ${accepted} (the operator configures them in METALFLOW_SITES_FILE)`);

    // A `temporal workflow start` input: the worker's selection checks it, and the run fails as a bad input does.
    const id = fleetWorkflowId(uniq('nosite'));
    const err = await h.client.workflow
      .execute('fleetWorkflow', { workflowId: id, taskQueue: h.taskQueue, args: [{ name: id.slice('fleet/'.length), operation: { kind: 'powerOff' }, selector: { sites: ['nowhere'] } }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const cause = (err as WorkflowFailedError).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect((cause as ApplicationFailure).type).toBe('InvalidFleetInput');
    expect((cause as ApplicationFailure).message).toContain(`selector.sites[0]: "nowhere" is not a configured site; ${accepted}`);
  });
});
