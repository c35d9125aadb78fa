/**
 * Ironic restarted with an empty database (issue 10 / issue 16 item 2): as a
 * Metal3 Ironic pod on ephemeral SQLite, every node is gone. Twenty hosts in
 * mixed states (available on and off, provisioned on and off, externally
 * provisioned, detached, a deploy waiting for its agent, a deprovision and a
 * reboot in flight, held at the fault proxy until the restart, and a reboot
 * and a keyed power off asked right after) each register again (the detached
 * ones stay out of Ironic) and end where they were, the operations in flight
 * done: provisioned hosts adopted with their image (deploys counted at the
 * fault proxy: none after the restart but the unfinished one's), no
 * inspection, no error held against any host.
 * Then hosts at rest, whose own checks are an hour away, told by the power
 * sentinel alone: one whose power operation had just ended, one registered
 * after the sentinel's worker stopped (a node it never listed), the worker
 * back only once Ironic is empty again. Both notice within 60 s.
 * On an Ironic of this file's own (scripts/stack.sh restart ironic --empty-db).
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IronicNode } from '../../clients/ironic/types';
import type { HostRef, HostSpec, Image } from '../../model/host';
import { hostWorkflowId, ironicNodeName } from '../../model/host-ref';
import { applyDirectivesUpdate, hostViewQuery, type HostView } from '../../contracts/host';
import { powerSentinelWorkflowId, type PowerSentinelWorkflow } from '../../contracts/power-sentinel';
import { DEFAULT_POWER_SENTINEL_SECONDS } from '../../config/env';
import { HostService } from '../../api/host-service';
import { defaultPayloadConverter } from '@temporalio/common';
import { HEAVY } from '../support/heavy';
import { pool } from '../../bench/common';

/** Hosts at rest in the sentinel's round: a small round in make test, 200 in npm run test:heavy. */
const AT_REST = HEAVY ? 200 : 5;
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { IronicProxy, isDeploy, type RecordedRequest } from '../../bench/support/ironic-proxy';
import { ownIronic, type OwnIronic } from '../support/own-ironic';
import { unusedPort } from '../support/ports';

const NS = 'db-loss';
/** Served on loopback: Ironic's agent deploy (the stuck one below) checks the image URL before it waits. */
const body = Buffer.from('metalflow db-loss image');
const images = createServer((req, res) => {
  res.writeHead(200, { 'content-length': body.length });
  res.end(req.method === 'HEAD' ? undefined : body);
});
let IMAGE: Image;

let ironic: OwnIronic;
let proxy: IronicProxy;
let h: Harness;

beforeAll(async () => {
  await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
  const { port } = images.address() as AddressInfo;
  IMAGE = { url: `http://127.0.0.1:${port}/db-loss.qcow2`, checksum: createHash('sha256').update(body).digest('hex'), checksumType: 'sha256', format: 'qcow2' };
  ironic = ownIronic('ironic-db-loss', await unusedPort());
  await ironic.start();
  proxy = new IronicProxy(ironic.url);
  await proxy.start();
  h = await startHarness({ ironicUrl: proxy.url, hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 3 } });
}, 180_000);

afterAll(async () => {
  await h?.close();
  await proxy?.stop();
  await ironic?.stop();
  images.close();
});

const view = (ref: HostRef): Promise<HostView> => h.client.workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery);
const idle = (ref: HostRef, state: string, more: (v: HostView) => boolean = () => true) =>
  waitFor(`${ref.name} ${state}`, async () => {
    const v = await view(ref);
    return v.status.provisioning.state === state && !v.currentOperation && more(v) ? v : undefined;
  }, { timeoutMs: 240_000, intervalMs: 500 });

type Kind =
  | 'availableOn'
  | 'availableOff'
  | 'provisioned'
  | 'provisionedOff'
  | 'externallyProvisioned'
  | 'detached'
  | 'midDeploy'
  | 'deprovisioning'
  | 'rebooting'
  | 'rebootedAfter'
  | 'heldOffAfter';
/** How many hosts of each kind: 20 in all. */
const FLEET: Record<Kind, number> = {
  availableOn: 3,
  availableOff: 2,
  provisioned: 4,
  provisionedOff: 2,
  externallyProvisioned: 2,
  detached: 2,
  midDeploy: 1,
  deprovisioning: 1,
  rebooting: 1,
  rebootedAfter: 1,
  heldOffAfter: 1,
};
const OFF: Kind[] = ['availableOff', 'provisionedOff'];
const WITH_IMAGE: Kind[] = ['provisioned', 'provisionedOff', 'detached', 'deprovisioning', 'rebooting', 'rebootedAfter', 'heldOffAfter'];

/** Each host's spec as first put: a provisioned host that is to be off is provisioned on, then turned off (as BMO, a host provisions only while online). */
const specs = new Map<string, HostSpec>();

async function host(kind: Kind, i: number): Promise<HostRef> {
  const ref = { namespace: NS, name: uniq(`${kind.toLowerCase()}-${i}`) };
  const spec: HostSpec = {
    bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` },
    bootMACAddress: randomMac(),
    online: !OFF.includes(kind) || WITH_IMAGE.includes(kind),
    automatedCleaningMode: 'disabled',
    ...(WITH_IMAGE.includes(kind) ? { image: IMAGE } : {}),
    ...(kind === 'externallyProvisioned' ? { externallyProvisioned: true } : {}),
  };
  await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
  specs.set(ref.name, spec);
  return ref;
}

const verb = (r: RecordedRequest, target: string): boolean =>
  r.method === 'PUT' && /\/states\/provision$/.test(r.path) && new RegExp(`"target":\\s*"${target}"`).test(r.body);
const onNodes = (ids: string[]) => (r: RecordedRequest): boolean => ids.some((id) => r.path.includes(`/nodes/${id}/`));
const isPowerChange = (r: RecordedRequest): boolean => r.method === 'PUT' && /\/states\/power$/.test(r.path);

describe('Ironic restarted with an empty database', () => {
  it('20 hosts in mixed states register again and end where they were; operations in flight resume; provisioned hosts are adopted, never deployed again', async () => {
    const hosts: { kind: Kind; ref: HostRef }[] = [];
    for (const [kind, n] of Object.entries(FLEET) as [Kind, number][]) for (let i = 0; i < n; i++) hosts.push({ kind, ref: await host(kind, i) });
    expect(hosts).toHaveLength(20);
    const of = (kind: Kind) => hosts.filter((x) => x.kind === kind).map((x) => x.ref);
    const one = (kind: Kind) => of(kind)[0]!;
    const steady: Record<Kind, string> = {
      availableOn: 'available',
      availableOff: 'available',
      provisioned: 'provisioned',
      provisionedOff: 'provisioned',
      externallyProvisioned: 'externally provisioned',
      detached: 'provisioned',
      midDeploy: 'available',
      deprovisioning: 'provisioned',
      rebooting: 'provisioned',
      rebootedAfter: 'provisioned',
      heldOffAfter: 'provisioned',
    };
    await Promise.all(hosts.map(({ kind, ref }) => idle(ref, steady[kind])));
    for (const ref of of('provisionedOff')) await h.hosts.put(ref, { spec: { ...specs.get(ref.name)!, online: false } });
    await Promise.all(of('provisionedOff').map((ref) => idle(ref, 'provisioned', (v) => !v.status.poweredOn)));

    // Detached (Metal3's detached annotation): out of Ironic, left alone.
    for (const ref of of('detached')) {
      await h.client.workflow.getHandle(hostWorkflowId(ref)).executeUpdate(applyDirectivesUpdate, { args: [{ detached: { deleteAction: 'delay', force: false } }] });
    }
    await Promise.all(of('detached').map((ref) => waitFor(`${ref.name} detached`, async () => (await view(ref)).status.operationalStatus === 'detached', { timeoutMs: 120_000 })));

    // A deploy that waits for an agent that never calls (as host-interrupt.test.ts): mid-provisioning when Ironic restarts.
    const midNode = (await view(one('midDeploy'))).status.provisioning.ID;
    await h.ironic.patchNode(midNode, [{ op: 'replace', path: '/deploy_interface', value: 'direct' }]);
    await h.hosts.setImage(one('midDeploy'), IMAGE);
    await waitFor('deploy waiting for its agent', async () => (await h.ironic.getNode(midNode))?.provision_state === 'wait call-back', { timeoutMs: 60_000 });

    // A deprovision and a reboot started just before the loss: their Ironic requests answered "node locked" until it.
    const deprovNode = (await view(one('deprovisioning'))).status.provisioning.ID;
    const rebootNode = (await view(one('rebooting'))).status.provisioning.ID;
    proxy.interceptor = (r) =>
      (verb(r, 'deleted') && onNodes([deprovNode])(r)) || (isPowerChange(r) && onNodes([rebootNode])(r))
        ? { kind: 'answer', status: 409, faultstring: 'Node is locked by host metalflow-test-proxy, please retry after the current operation is completed.' }
        : undefined;
    await h.hosts.setImage(one('deprovisioning'), null);
    await h.hosts.reboot(one('rebooting'), 'hard');
    const held = (node: string, what: (r: RecordedRequest) => boolean) => async () =>
      proxy.requests.some((r) => r.injected && what(r) && onNodes([node])(r));
    await waitFor('the deprovision held at the proxy', held(deprovNode, (r) => verb(r, 'deleted')), { timeoutMs: 60_000 });
    await waitFor('the reboot held at the proxy', held(rebootNode, isPowerChange), { timeoutMs: 60_000 });
    expect((await view(one('deprovisioning'))).currentOperation?.kind).toBe('deprovision');
    expect((await view(one('rebooting'))).currentOperation?.kind).toBe('reboot');

    const before = new Map<HostRef, HostView>();
    for (const { ref } of hosts) before.set(ref, await view(ref));
    const oldIds = new Map(hosts.map(({ ref }) => [ref, before.get(ref)!.status.provisioning.ID]));

    await ironic.restartEmpty();
    proxy.interceptor = undefined;
    const mark = proxy.requests.length;
    for (const { kind, ref } of hosts) if (kind !== 'detached') expect(await h.ironic.getNode(oldIds.get(ref)!), ref.name).toBeUndefined();
    // Operations asked for right after: they meet the lost node, or the re-registered one.
    await h.hosts.reboot(one('rebootedAfter'), 'hard');
    await h.hosts.holdPowerOff(one('heldOffAfter'), 'maintenance', 'hard');

    const lastSeq = (ref: HostRef) => before.get(ref)!.operations.filter((o) => o.outcome !== 'running').at(-1)!.seq;
    const opsAfter = (ref: HostRef, v: HostView) => v.operations.filter((o) => o.seq > lastSeq(ref));
    const reregistered = (ref: HostRef) => (v: HostView) =>
      v.status.provisioning.ID !== oldIds.get(ref) && opsAfter(ref, v).some((o) => o.kind === 'enroll' && o.outcome === 'succeeded');
    const did = (ref: HostRef, kind: string) => (v: HostView) => opsAfter(ref, v).some((o) => o.kind === kind && o.outcome === 'succeeded');
    /** Where each kind of host ends, and what shows it got there after the loss. */
    const ends: Record<Kind, { state: string; done: (ref: HostRef) => (v: HostView) => boolean }> = {
      availableOn: { state: 'available', done: (ref) => (v) => reregistered(ref)(v) && v.status.poweredOn },
      availableOff: { state: 'available', done: (ref) => (v) => reregistered(ref)(v) && !v.status.poweredOn },
      provisioned: { state: 'provisioned', done: (ref) => (v) => reregistered(ref)(v) && v.status.poweredOn },
      provisionedOff: { state: 'provisioned', done: (ref) => (v) => reregistered(ref)(v) && !v.status.poweredOn },
      externallyProvisioned: { state: 'externally provisioned', done: (ref) => (v) => reregistered(ref)(v) && v.status.poweredOn },
      // Nothing to notice: a detached host has no node and checks none.
      detached: { state: 'provisioned', done: () => (v) => v.status.operationalStatus === 'detached' },
      midDeploy: { state: 'provisioned', done: (ref) => reregistered(ref) },
      deprovisioning: { state: 'available', done: (ref) => (v) => reregistered(ref)(v) && did(ref, 'deprovision')(v) },
      rebooting: { state: 'provisioned', done: (ref) => (v) => reregistered(ref)(v) && did(ref, 'reboot')(v) },
      rebootedAfter: { state: 'provisioned', done: (ref) => (v) => reregistered(ref)(v) && did(ref, 'reboot')(v) },
      heldOffAfter: { state: 'provisioned', done: (ref) => (v) => reregistered(ref)(v) && !v.status.poweredOn },
    };
    const end = new Map<HostRef, HostView>();
    await Promise.all(hosts.map(async ({ kind, ref }) => end.set(ref, await idle(ref, ends[kind].state, ends[kind].done(ref)))));

    const after = proxy.requests.slice(mark);
    for (const { kind, ref } of hosts) {
      const v = end.get(ref)!;
      const key = `${kind} ${ref.name}`;
      // Nothing is held against the host: the lost node was not an operation failure.
      expect(v.status.errorType, key).toBe('');
      expect(v.status.errorCount, key).toBe(0);
      expect(opsAfter(ref, v).map((o) => o.kind), key).not.toContain('inspect');
      const node = await h.ironic.getNode(ironicNodeName(ref));
      if (kind === 'detached') {
        // Left out of Ironic: not registered again, nothing sent for it.
        expect(node, key).toBeUndefined();
        expect(opsAfter(ref, v), key).toEqual([]);
        continue;
      }
      // Its node again, by name, with metalflow's mark, under the id the host now holds.
      expect(node?.uuid, key).toBe(v.status.provisioning.ID);
      expect((node as IronicNode).extra.metalflow_host, key).toBe(`${NS}/${ref.name}`);
      const ids = [oldIds.get(ref)!, v.status.provisioning.ID];
      const deploys = proxy.requests.filter((r) => isDeploy(r) && onNodes(ids)(r)).length;
      const adopts = after.filter((r) => verb(r, 'adopt') && onNodes(ids)(r)).length;
      if (kind === 'midDeploy') {
        // The deploy in flight is done again on the new node: it had never finished.
        expect(deploys, key).toBe(2);
        expect(node!.provision_state, key).toBe('active');
      } else if (kind === 'availableOn' || kind === 'availableOff') {
        expect(deploys, key).toBe(0);
        expect(['manageable', 'available'], key).toContain(node!.provision_state);
      } else if (kind === 'externallyProvisioned') {
        expect(deploys, key).toBe(0);
      } else if (kind === 'deprovisioning') {
        // Registered again in deprovisioning (not adopted: its image is being given up), the deprovision
        // run again to its end on the new node; no deploy after the loss.
        expect(deploys, key).toBe(1);
        expect(adopts, key).toBe(0);
        expect(['manageable', 'available'], key).toContain(node!.provision_state);
      } else {
        // Provisioned before: adopted with its image, not deployed again.
        expect(deploys, key).toBe(1);
        expect(adopts, key).toBe(1);
        expect(node!.provision_state, key).toBe('active');
        expect(node!.instance_info.image_source, key).toBe(IMAGE.url);
      }
    }
    expect(end.get(one('heldOffAfter'))!.power.holds).toHaveProperty('maintenance');
    // The reboot in flight reached the new node (the first power change after the loss on its id).
    expect(after.some((r) => isPowerChange(r) && onNodes([end.get(one('rebooting'))!.status.provisioning.ID])(r))).toBe(true);
    expect(after.filter((r) => verb(r, 'inspect'))).toEqual([]);
    for (const { ref } of hosts) await h.client.workflow.getHandle(hostWorkflowId(ref)).terminate('test done');
  }, 1_200_000);
});

describe('hosts at rest when Ironic loses its database, told by the power sentinel', () => {
  it(`${AT_REST} hosts notice within 60 s: one whose operation had just ended, one whose node the sentinel never listed, the sentinel's worker restarted across the loss`, async () => {
    const ns = uniq('db-loss-rest');
    // Their own checks an hour away: only the sentinel can tell them.
    const rest = new HostService({ client: h.client, secrets: h.secrets, taskQueue: h.taskQueue, hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 3600, watchedPowerCheckSeconds: 3600 } });
    const put = async (name: string): Promise<HostRef> => {
      const ref = { namespace: ns, name };
      const spec: HostSpec = { bmc: { address: `fake://${ns}-${name}`, credentialsName: `${name}-bmc` }, bootMACAddress: randomMac(), online: true, inspectionMode: 'disabled', automatedCleaningMode: 'disabled' };
      specs.set(name, spec);
      await rest.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
      return ref;
    };
    const resting = (ref: HostRef, more: (v: HostView) => boolean) => idle(ref, 'available', more);
    // The sentinel on a worker of its own, at the default interval, for this namespace's hosts.
    const sentinelQueue = uniq('sentinel');
    let sentinelWorker = await startHarness({ ironicUrl: proxy.url, taskQueue: sentinelQueue });
    try {
      const others = Array.from({ length: AT_REST - 2 }, (_, i) => `rest-${i}`);
      const ended = await put('ended');
      for (const name of others) await put(name);
      const before = await resting(ended, (v) => v.status.poweredOn);
      const othersBefore = new Map<string, string>();
      await pool(others, 20, async (name) => void othersBefore.set(name, (await resting({ namespace: ns, name }, (v) => v.status.poweredOn)).status.provisioning.ID));
      const restFrom = { at: Date.now(), requests: proxy.requests.length };
      const sentinel = await h.client.workflow.start<PowerSentinelWorkflow>('powerSentinelWorkflow', {
        workflowId: powerSentinelWorkflowId(sentinelQueue),
        taskQueue: sentinelQueue,
        args: [{ intervalSeconds: DEFAULT_POWER_SENTINEL_SECONDS, namespace: ns }],
      });
      // Its first list, made after the host had its node.
      await waitFor('the sentinel listed Ironic', async () => {
        const payload = (await sentinel.describe()).raw.pendingActivities?.[0]?.heartbeatDetails?.payloads?.[0];
        return payload ? defaultPayloadConverter.fromPayload<{ lists: number }>(payload).lists >= 1 : false;
      }, { timeoutMs: 60_000 });
      // A power operation that ends just before the loss.
      await rest.put(ended, { spec: { ...specs.get('ended')!, online: false } });
      await resting(ended, (v) => !v.status.poweredOn);

      // The sentinel's worker stops; a host registers meanwhile (its node never listed); Ironic loses every node.
      console.log(`${AT_REST - 1} hosts at rest: ${proxy.requests.length - restFrom.requests} Ironic requests in ${((Date.now() - restFrom.at) / 1000).toFixed(1)} s (the sentinel's lists and one power operation)`);
      await sentinelWorker.close();
      const young = await put('young');
      const youngBefore = await resting(young, (v) => v.status.poweredOn);
      await ironic.restartEmpty();
      const back = Date.now();
      sentinelWorker = await startHarness({ ironicUrl: proxy.url, taskQueue: sentinelQueue });

      // Noticed: the host's lost-node record set, or already registered again on a node of its own.
      const noticed = (ref: HostRef, oldId: string) =>
        waitFor(`${ref.name} noticed its node is gone`, async () => {
          const v = await view(ref);
          return v.status.provisioning.ID !== oldId || v.operations.some((o) => o.kind === 'enroll' && Date.parse(o.startedAt) >= back) ? Date.now() - back : undefined;
        }, { timeoutMs: 60_000 + 20_000, intervalMs: 500 });
      const afterLoss = proxy.requests.length;
      const all: [HostRef, string, boolean][] = [
        [ended, before.status.provisioning.ID, false],
        [young, youngBefore.status.provisioning.ID, true],
        ...others.map((name): [HostRef, string, boolean] => [{ namespace: ns, name }, othersBefore.get(name)!, true]),
      ];
      const took = await Promise.all(all.map(([ref, oldId]) => noticed(ref, oldId)));
      console.log(`noticed ${took[0]} ms (operation just ended), ${took[1]} ms (never listed), slowest of ${all.length} ${Math.max(...took)} ms after Ironic answered again, empty`);
      for (const [ref, oldId, on] of all) {
        const v = await resting(ref, (x) => x.status.provisioning.ID !== oldId && x.status.poweredOn === on);
        expect((await h.ironic.getNode(v.status.provisioning.ID))?.extra.metalflow_host, ref.name).toBe(`${ns}/${ref.name}`);
        expect(v.status.errorCount, ref.name).toBe(0);
      }
      console.log(`${proxy.requests.length - afterLoss} Ironic requests from the loss until all ${all.length} registered again`);
      await sentinel.terminate('test done');
      for (const [ref] of all) await h.client.workflow.getHandle(hostWorkflowId(ref)).terminate('test done');
    } finally {
      rest.close();
      await sentinelWorker.close();
    }
  }, HEAVY ? 1_800_000 : 600_000);
});
