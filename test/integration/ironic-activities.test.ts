/**
 * The Ironic activities against the real Ironic (fake-hardware and redfish
 * drivers) and the real sushy-tools Redfish emulator.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { IronicClient } from '../../clients/ironic/client';
import { IronicError } from '../../clients/ironic/errors';
import { deployedNode } from '../support/deployed-node';
import { createIronicActivities } from '../../activities/ironic/activities';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import type { HostSpec } from '../../model/host';
import { IRONIC_URL, SUSHY_URL } from '../support/env';
import { IronicProxy } from '../../bench/support/ironic-proxy';
import { randomMac, uniq } from '../support/harness';

const secrets = new LocalSecretStore(mkdtempSync(join(tmpdir(), 'mf-act-')), randomBytes(32));
const ironic = new IronicClient({ url: IRONIC_URL });
const poll = { initialMs: 100, factor: 1.5, maxMs: 1000 };
const acts = createIronicActivities({ ironic, secrets, poll });
const NS = 'activities';

async function fakeHost(): Promise<{ ref: { namespace: string; name: string }; spec: HostSpec }> {
  const ref = { namespace: NS, name: uniq('fake') };
  await secrets.write(NS, `${ref.name}-bmc`, { username: 'admin', password: 'pw' });
  return {
    ref,
    spec: { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true },
  };
}

/** The activities through the fault proxy in front of the real Ironic, stopped after `use`. */
async function withProxy(use: (a: ReturnType<typeof createIronicActivities>, proxy: IronicProxy) => Promise<void>): Promise<void> {
  const proxy = new IronicProxy(IRONIC_URL);
  await proxy.start();
  try {
    await use(createIronicActivities({ ironic: new IronicClient({ url: proxy.url }), secrets, poll }), proxy);
  } finally {
    await proxy.stop();
  }
}

/** An activity run in an activity context (heartbeats, sent markers), typed as the activity is. */
const runIn = <A extends unknown[], R>(env: MockActivityEnvironment, fn: (...args: A) => Promise<R>, ...args: A): Promise<R> => env.run(fn, ...args);

async function failureOf(p: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

describe('Ironic client', () => {
  it('negotiates the microversion with the real Ironic', async () => {
    expect(await ironic.microversion()).toBe('1.81');
  });

  it('says clearly when the server is too old', async () => {
    // No real Ironic this old is installable here, so a stand-in answers GET /v1/ only.
    const old = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ version: { version: '1.46', min_version: '1.1' } }));
    });
    await new Promise<void>((r) => old.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(old.address() as AddressInfo).port}`;
    try {
      await expect(new IronicClient({ url }).microversion()).rejects.toThrow(/supports API up to 1\.46; metalflow needs 1\.81/);
      const a = createIronicActivities({ ironic: new IronicClient({ url }), secrets, poll });
      const { ref, spec } = await fakeHost();
      const f = await failureOf(a.ensureNode({ ref, spec }));
      expect(f.type).toBe('IronicTooOld');
      expect(f.nonRetryable).toBe(true);
    } finally {
      old.close();
    }
  });

  it('reports an unreachable Ironic as a transient, retryable failure', async () => {
    const a = createIronicActivities({ ironic: new IronicClient({ url: 'http://127.0.0.1:9' }), secrets, poll });
    const { ref, spec } = await fakeHost();
    const f = await failureOf(a.ensureNode({ ref, spec }));
    expect(f.type).toBe('Transient');
    expect(f.nonRetryable).toBe(false);
    expect(f.message).toMatch(/cannot reach Ironic at http:\/\/127\.0\.0\.1:9/);
  });
});

describe('ensureNode', () => {
  it('creates the node once, named namespace~name, with a port for the boot MAC', async () => {
    const { ref, spec } = await fakeHost();
    const first = await acts.ensureNode({ ref, spec });
    const again = await acts.ensureNode({ ref, spec });
    expect(again.nodeId).toBe(first.nodeId);
    const node = await ironic.getNode(first.nodeId);
    expect(node?.name).toBe(`${NS}~${ref.name}`);
    expect(node?.driver).toBe('fake-hardware');
    expect(node?.provision_state).toBe('enroll');
    const ports = await ironic.listPorts(first.nodeId);
    expect(ports.map((p) => p.address)).toEqual([spec.bootMACAddress]);
  });

  it('creates a new host\'s node without looking it up by name; a retry after Ironic took the create finds that node by its name', async () => {
    await withProxy(async (a, proxy) => {
      const { ref, spec } = await fakeHost();
      proxy.requests.length = 0;
      await a.ensureNode({ ref, spec });
      const asked = proxy.requests.map((r) => `${r.method} ${r.path.split('?')[0]}`);
      expect(asked).not.toContain(`GET /v1/nodes/${NS}~${ref.name}`);
      expect(asked.filter((r) => r.startsWith('POST'))).toEqual(['POST /v1/nodes', 'POST /v1/ports']);

      // An attempt that died once Ironic had created its node, before the port: the node has the host's name and mark.
      const retry = await fakeHost();
      const earlier = await ironic.createNode({ name: `${NS}~${retry.ref.name}`, driver: 'fake-hardware', driver_info: { stale: 'yes' }, extra: { metalflow_host: `${NS}/${retry.ref.name}` } });
      proxy.requests.length = 0;
      expect((await a.ensureNode(retry)).nodeId).toBe(earlier.uuid);
      expect(proxy.requests.filter((r) => r.method === 'POST').map((r) => r.path)).toEqual(['/v1/nodes', '/v1/ports']);
      expect((await ironic.listPorts(earlier.uuid)).map((p) => p.address)).toEqual([retry.spec.bootMACAddress]);
      // Brought in line with the spec as a node found by name is (its driver_info is the spec's, not the earlier one's).
      expect((await ironic.getNode(earlier.uuid))?.driver_info.stale).toBeUndefined();
    });
  });

  it('adopts a node found by MAC only when it carries the host\'s ownership mark', async () => {
    const { ref, spec } = await fakeHost();
    const marked = await ironic.createNode({ name: uniq('handed-over'), driver: 'fake-hardware', extra: { metalflow_host: `${NS}/${ref.name}` } });
    await ironic.createPort(marked.uuid, spec.bootMACAddress!);
    const result = await acts.ensureNode({ ref, spec });
    expect(result.nodeId).toBe(marked.uuid);
    expect((await ironic.getNode(marked.uuid))?.name).toBe(`${NS}~${ref.name}`);
  });

  it('marks a node found by name that has no mark (Metal3\'s, or one registered before marks were checked)', async () => {
    const { ref, spec } = await fakeHost();
    const bmo = await ironic.createNode({ name: `${NS}~${ref.name}`, driver: 'fake-hardware' });
    expect((await acts.ensureNode({ ref, spec })).nodeId).toBe(bmo.uuid);
    expect((await ironic.getNode(bmo.uuid))?.extra.metalflow_host).toBe(`${NS}/${ref.name}`);
  });

  it("adopts an active node with Metal3's interfaces as they are: Ironic's refusal to change them there is not transient", async () => {
    const { ref, spec } = await fakeHost();
    // Metal3 registers without fast inspection with the agent inspect interface; metalflow picks fake for fake-hardware.
    const bmo = await deployedNode(ironic, `${NS}~${ref.name}`, spec.bootMACAddress!, { url: 'http://127.0.0.1/images/bmo.qcow2', checksum: 'e'.repeat(64) }, { inspect_interface: 'agent' });
    const patch = await ironic.patchNode(bmo.uuid, [{ op: 'add', path: '/inspect_interface', value: 'fake' }]).then(() => undefined, (e: unknown) => e);
    expect(patch).toBeInstanceOf(IronicError);
    expect(patch).toMatchObject({ kind: 'rejected', status: 409 });
    expect((patch as IronicError).message).toMatch(/can not have inspect_interface updated unless it is in one of allowed/);

    const adopted = await acts.ensureNode({ ref, spec, nodeId: bmo.uuid });
    expect(adopted).toMatchObject({ nodeId: bmo.uuid, provisionState: 'active', poweredOn: true });
    const after = await ironic.getNode(bmo.uuid);
    expect(after).toMatchObject({ inspect_interface: 'agent', provision_state: 'active', extra: { metalflow_host: `${NS}/${ref.name}` } });
  });

  it('fails with the secret and key named when credentials are missing, creating nothing', async () => {
    const { ref, spec } = await fakeHost();
    spec.bmc = { ...spec.bmc!, credentialsName: 'no-such-secret' };
    const f = await failureOf(acts.ensureNode({ ref, spec }));
    expect(f.type).toBe('SecretMissing');
    expect(f.message).toBe(`Secret ${NS}/no-such-secret not found`);
    expect(await ironic.getNode(`${NS}~${ref.name}`)).toBeUndefined();
  });

  it('refuses a boot MAC that belongs to another node', async () => {
    const a = await fakeHost();
    const b = await fakeHost();
    b.spec.bootMACAddress = a.spec.bootMACAddress;
    await acts.ensureNode(a);
    // b has no node by name, and the node its MAC leads to belongs to a.
    const f = await failureOf(acts.ensureNode(b));
    expect(f.message).toMatch(/already registered to Ironic node activities~/);
    // The node created for b before its port's 409 told the MAC was taken is gone again.
    expect(await ironic.getNode(`${NS}~${b.ref.name}`)).toBeUndefined();
  });

  it("looks a new host's boot MAC up only when Ironic refuses its port (409)", async () => {
    await withProxy(async (a, proxy) => {
      const { ref, spec } = await fakeHost();
      proxy.requests.length = 0;
      await a.ensureNode({ ref, spec });
      expect(proxy.requests.filter((r) => r.method === 'GET' && r.path.startsWith('/v1/ports'))).toEqual([]);
      // The host's own node (its mark) under another name holds the MAC: the node the create made is removed, that one
      // is the host's, renamed, with no second port.
      const other = await fakeHost();
      const marked = await ironic.createNode({ name: uniq('renamed'), driver: 'fake-hardware', extra: { metalflow_host: `${NS}/${other.ref.name}` } });
      await ironic.createPort(marked.uuid, other.spec.bootMACAddress!);
      proxy.requests.length = 0;
      expect((await a.ensureNode(other)).nodeId).toBe(marked.uuid);
      expect(proxy.requests.filter((r) => r.method === 'DELETE').length).toBe(1);
      expect((await ironic.getNode(`${NS}~${other.ref.name}`))?.uuid).toBe(marked.uuid);
      expect((await ironic.listPorts(marked.uuid)).map((p) => p.address)).toEqual([other.spec.bootMACAddress]);
    });
  });
});

describe('a fake-hardware host through every provision-state verb', () => {
  it('manage → inspect → provide → active with config drive → deleted → power off → delete', async () => {
    const { ref, spec } = await fakeHost();
    await secrets.write(NS, `${ref.name}-ud`, { userData: '#cloud-config\nhostname: x\n' });
    const { nodeId } = await acts.ensureNode({ ref, spec });
    expect((await acts.manageNode({ ref, nodeId })).provisionState).toBe('manageable');
    await acts.inspectNode({ ref, nodeId });
    expect((await ironic.getNode(nodeId))?.provision_state).toBe('manageable');
    expect((await acts.provideNode({ ref, nodeId, automatedCleaning: true })).provisionState).toBe('available');
    const image = { url: 'http://127.0.0.1/images/demo.qcow2', checksum: 'b'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };
    const deployed = await acts.deployNode({ ref, nodeId, image, userData: { name: `${ref.name}-ud` } });
    expect(deployed.provisionState).toBe('active');
    const node = await ironic.getNode(nodeId);
    expect(node?.instance_info.image_source).toBe(image.url);
    expect(node?.instance_info.image_os_hash_algo).toBe('sha256');
    // Level-triggered: asking again for what is already true sends no verb.
    expect((await acts.deployNode({ ref, nodeId, image })).provisionState).toBe('active');
    expect((await acts.undeployNode({ ref, nodeId, automatedCleaning: false })).provisionState).toBe('available');
    expect((await acts.setPower({ ref, nodeId, on: false })).poweredOn).toBe(false);
    expect(await acts.deleteNode({ ref, nodeId })).toEqual({ deleted: true });
    expect(await ironic.getNode(nodeId)).toBeUndefined();
    // Deleting what is gone is fine.
    expect(await acts.deleteNode({ ref, nodeId })).toEqual({ deleted: true });
  });

  it('retries through HTTP 409 (node locked) without failing the operation', async () => {
    await withProxy(async (a, proxy) => {
      const { ref, spec } = await fakeHost();
      const { nodeId } = await a.ensureNode({ ref, spec });
      const isManage = (r: { method: string; path: string; body: string }) =>
        r.method === 'PUT' && r.path.endsWith('/states/provision') && r.body.includes('"manage"');
      proxy.fail(isManage, 2);
      expect((await a.manageNode({ ref, nodeId })).provisionState).toBe('manageable');
      expect(proxy.count(isManage)).toBe(3);
    });
  });
});

describe('ensureNode on a slow Ironic (issue 17)', () => {
  it('heartbeats while a request is held past 10 s (what its 1-minute heartbeat timeout relies on), and not when Ironic answers at once', async () => {
    await withProxy(async (a, proxy) => {
      const beats = async (hold: boolean): Promise<{ beats: number; nodeId: string; ref: { namespace: string; name: string } }> => {
        const { ref, spec } = await fakeHost();
        let held = false;
        // The node's creation queued behind a busy Ironic: the activity is making progress, not lost.
        if (hold) proxy.hold((r) => !held && r.method === 'POST' && r.path === '/v1/nodes' && (held = true), 11_000);
        const env = new MockActivityEnvironment({ activityId: uniq('ensure') });
        let count = 0;
        env.on('heartbeat', () => (count += 1));
        const { nodeId } = await runIn(env, a.ensureNode, { ref, spec });
        if (hold) expect(held).toBe(true);
        return { beats: count, nodeId, ref };
      };
      const quick = await beats(false);
      expect(quick.beats).toBe(0);
      const slow = await beats(true);
      expect(slow.beats).toBeGreaterThanOrEqual(1);
      expect((await ironic.getNode(slow.nodeId))?.provision_state).toBe('enroll');
      for (const { ref, nodeId } of [quick, slow]) expect((await acts.deleteNode({ ref, nodeId })).deleted).toBe(true);
    });
  });
});

describe('node PATCHes (issue 17)', () => {
  it('writes what a verb needs with its sent marker in one PATCH, and disable_power_off with the new node', async () => {
    await withProxy(async (a, proxy) => {
      const { ref, spec } = await fakeHost();
      // In an activity context the verbs write their sent marker (activities/ironic/sent-marker.ts); one activity id per call.
      const run = <A extends unknown[], R>(id: string, fn: (...args: A) => Promise<R>, ...args: A): Promise<R> =>
        runIn(new MockActivityEnvironment({ activityId: id }), fn, ...args);
      const patches = (): { path: string; value?: unknown }[][] =>
        proxy.requests.filter((r) => r.method === 'PATCH').map((r) => JSON.parse(r.body) as { path: string; value?: unknown }[]);
      const { nodeId } = await run('ensure', a.ensureNode, { ref, spec: { ...spec, disablePowerOff: true } });
      // Before: a POST, then a PATCH of disable_power_off alone.
      expect(patches()).toEqual([]);
      expect(await ironic.getDisablePowerOff(nodeId)).toBe(true);
      await run('manage', a.manageNode, { ref, nodeId });
      // manage writes no sent marker: sent again after a crash it only checks the BMC again.
      expect(patches()).toEqual([]);
      proxy.requests.length = 0;
      // The node was registered with automated_clean true: provide with cleaning off changes it with the marker.
      expect((await run('provide', a.provideNode, { ref, nodeId, automatedCleaning: false })).provisionState).toBe('available');
      expect(patches().map((ops) => ops.map((o) => o.path).sort())).toEqual([['/automated_clean', '/extra/metalflow_sent']]);
      proxy.requests.length = 0;
      const image = { url: 'http://127.0.0.1/images/demo.qcow2', checksum: 'b'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };
      expect((await run('deploy', a.deployNode, { ref, nodeId, image })).provisionState).toBe('active');
      const [deployPatch, ...others] = patches();
      expect(others).toEqual([]);
      expect(deployPatch?.some((o) => o.path === '/extra/metalflow_sent' && (o.value as { verb?: string }).verb === 'active')).toBe(true);
      expect(deployPatch?.some((o) => o.path.startsWith('/instance_info'))).toBe(true);
      const node = await ironic.getNode(nodeId);
      expect(node?.instance_info.image_source).toBe(image.url);
      expect(node?.automated_clean).toBe(false);
      await run('undeploy', a.undeployNode, { ref, nodeId, automatedCleaning: false });
      await acts.deleteNode({ ref, nodeId });
    });
  });
});

describe('whole-node reads (issue 47)', () => {
  it('reads the node whole once per decision: not after each verb, nor at each state Ironic passes through', async () => {
    await withProxy(async (a, proxy) => {
      const { ref, spec } = await fakeHost();
      const { nodeId } = await a.ensureNode({ ref, spec });
      await a.manageNode({ ref, nodeId });
      const whole = (): number => proxy.requests.filter((r) => r.method === 'GET' && r.path === `/v1/nodes/${nodeId}`).length;
      const byId = (): number => proxy.requests.filter((r) => r.method === 'GET' && r.path.startsWith(`/v1/nodes/${nodeId}`)).length;
      proxy.requests.length = 0;
      // The settings check: the node and its disable_power_off in one GET.
      await a.syncNodeSettings({ ref, spec, nodeId });
      expect(byId()).toBe(1);
      proxy.requests.length = 0;
      // manageable -> provide (cleaning) -> available -> deploy (deploying) -> active: a read to decide the provide; the
      // deploy is decided on the node as the provide's PATCH wrote it (its instance_info) and the watcher's fields over
      // it, and the states between and the end come from the watcher's field reads.
      const image = { url: 'http://127.0.0.1/images/demo.qcow2', checksum: 'b'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };
      expect((await a.deployNode({ ref, nodeId, image, automatedCleaning: true })).provisionState).toBe('active');
      expect(whole()).toBe(1);
      proxy.requests.length = 0;
      // The lookup's read decides the power change; the watcher sees it done.
      expect((await a.setPower({ ref, nodeId, on: false })).poweredOn).toBe(false);
      expect(whole()).toBe(1);
      await a.undeployNode({ ref, nodeId, automatedCleaning: false });
      await a.deleteNode({ ref, nodeId });
    });
  });
});

describe("a deploy from manageable: the provide's sent marker announces it", () => {
  const image = { url: 'http://127.0.0.1/images/demo.qcow2', checksum: 'b'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };
  const managed = async (a: ReturnType<typeof createIronicActivities>) => {
    const { ref, spec } = await fakeHost();
    const { nodeId } = await a.ensureNode({ ref, spec: { ...spec, automatedCleaningMode: 'disabled' }, manage: true });
    return { ref, nodeId };
  };

  it('writes instance_info with the provide\'s marker; active follows with no PATCH and no read of its own', async () => {
    await withProxy(async (a, proxy) => {
      const { ref, nodeId } = await managed(a);
      proxy.requests.length = 0;
      expect((await runIn(new MockActivityEnvironment({ activityId: 'deploy' }), a.deployNode, { ref, nodeId, image, automatedCleaning: false })).provisionState).toBe('active');
      const patches = proxy.requests.filter((r) => r.method === 'PATCH').map((r) => JSON.parse(r.body) as { path: string; value?: unknown }[]);
      expect(patches).toHaveLength(1);
      expect(patches[0]?.find((o) => o.path === '/extra/metalflow_sent')?.value).toMatchObject({ verb: 'provide', then: 'active' });
      expect(patches[0]?.some((o) => o.path === '/instance_info/image_source')).toBe(true);
      const verbs = proxy.requests.filter((r) => r.method === 'PUT' && r.path.endsWith('/states/provision')).map((r) => (JSON.parse(r.body) as { target: string }).target);
      expect(verbs).toEqual(['provide', 'active']);
      expect(proxy.count((r) => r.method === 'GET' && r.path === `/v1/nodes/${nodeId}`)).toBe(1);
      expect((await ironic.getNode(nodeId))?.instance_info.image_source).toBe(image.url);
    });
  });

  it('an attempt that died once Ironic took the announced deploy, which failed at once: the next attempt reports the failure and deploys nothing', async () => {
    await withProxy(async (a, proxy) => {
      const { ref, nodeId } = await managed(a);
      // Ironic's agent deploy checks the image URL first: nothing listens there, so the deploy fails within a second.
      await ironic.patchNode(nodeId, [{ op: 'replace', path: '/deploy_interface', value: 'direct' }]);
      const failing = { url: 'http://127.0.0.1:9/nothing.qcow2', checksum: 'f'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };
      const isActive = (r: { method: string; path: string; body: string }) => r.method === 'PUT' && r.path === `/v1/nodes/${nodeId}/states/provision` && r.body.includes('"active"');
      // The first attempt: its heartbeat details die with it (a new environment has none), as with a killed worker.
      const first = new MockActivityEnvironment({ activityId: 'deploy-crash' });
      proxy.onceAnswered(isActive, () => first.cancel());
      await runIn(first, a.deployNode, { ref, nodeId, image: failing, automatedCleaning: false }).then(() => expect.unreachable('the first attempt ends with its cancellation'), () => undefined);
      expect(proxy.count(isActive)).toBe(1);
      // No marker was written for `active`: the provide's announced it.
      expect((await ironic.getNode(nodeId))?.extra.metalflow_sent).toMatchObject({ verb: 'provide', then: 'active' });
      const second = new MockActivityEnvironment({ activityId: 'deploy-crash' });
      const f = await failureOf(runIn(second, a.deployNode, { ref, nodeId, image: failing, automatedCleaning: false }));
      expect(f.message).toMatch(/deploy failed/);
      expect(proxy.count(isActive)).toBe(1);
    });
  });
});

describe('one activity where there were two (issue 47)', () => {
  it('manages the node registration created from the create\'s answer, and a prepare powers the node on from its own read', async () => {
    await withProxy(async (a, proxy) => {
      const { ref, spec } = await fakeHost();
      const whole = (nodeId: string): number => proxy.requests.filter((r) => r.method === 'GET' && r.path === `/v1/nodes/${nodeId}`).length;
      const verbs = (nodeId: string, kind: 'provision' | 'power'): number => proxy.count((r) => r.method === 'PUT' && r.path === `/v1/nodes/${nodeId}/states/${kind}`);
      // Registration and manage in one call: ensureNode followed by manageNode read the node whole in between.
      const registered = await runIn(new MockActivityEnvironment({ activityId: 'register' }), a.ensureNode, { ref, spec, manage: true });
      expect(registered.provisionState).toBe('manageable');
      const { nodeId } = registered;
      expect(whole(nodeId)).toBe(0);
      expect(verbs(nodeId, 'provision')).toBe(1);
      // A retry of that call (the worker died after it): the node is found and already manageable; no verb again.
      expect((await runIn(new MockActivityEnvironment({ activityId: 'register' }), a.ensureNode, { ref, spec, nodeId, manage: true })).provisionState).toBe('manageable');
      expect(verbs(nodeId, 'provision')).toBe(1);
      proxy.requests.length = 0;
      // The prepare's own read (the settings check) decides the power-on too: no lookup of a power operation's own.
      const prepared = await runIn(new MockActivityEnvironment({ activityId: 'prepare' }), a.prepareNode, { ref, nodeId, settings: spec, powerOn: true });
      expect(prepared).toMatchObject({ provisionState: 'manageable', poweredOn: true });
      expect((await ironic.getNode(nodeId))?.power_state).toBe('power on');
      expect(whole(nodeId)).toBe(1);
      expect(verbs(nodeId, 'power')).toBe(1);
      // Asked again, already on: nothing sent.
      expect((await a.prepareNode({ ref, nodeId, settings: spec, powerOn: true })).poweredOn).toBe(true);
      expect(verbs(nodeId, 'power')).toBe(1);
      await a.setPower({ ref, nodeId, on: false });
      await a.deleteNode({ ref, nodeId });
    });
  });
});

describe('a Redfish host on sushy-tools', () => {
  const system = '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000004';
  const redfishHost = async (password: string) => {
    const ref = { namespace: NS, name: uniq('redfish') };
    await secrets.write(NS, `${ref.name}-bmc`, { username: 'admin', password });
    const spec: HostSpec = {
      bmc: { address: `redfish+${SUSHY_URL}${system}`, credentialsName: `${ref.name}-bmc` },
      online: true,
      automatedCleaningMode: 'disabled',
    };
    return { ref, spec };
  };

  it('registers and inspects out of band, filling hardware details', async () => {
    const { ref, spec } = await redfishHost('password');
    const { nodeId } = await acts.ensureNode({ ref, spec });
    const node = await ironic.getNode(nodeId);
    expect(node?.driver).toBe('redfish');
    expect(node?.driver_info.redfish_system_id).toBe(system);
    expect(JSON.stringify(node?.driver_info)).not.toContain('"password"');
    expect((await acts.manageNode({ ref, nodeId })).provisionState).toBe('manageable');
    const { hardware } = await acts.inspectNode({ ref, nodeId });
    expect(hardware.cpu?.count).toBeGreaterThan(0);
    expect(hardware.ramMebibytes).toBeGreaterThan(0);
    await acts.deleteNode({ ref, nodeId });
  });

  it('fails registration with Ironic’s reason when the BMC password is wrong', async () => {
    const { ref, spec } = await redfishHost('wrong-password');
    const { nodeId } = await acts.ensureNode({ ref, spec });
    const f = await failureOf(acts.manageNode({ ref, nodeId }));
    expect(f.type).toBe('OperationFailed');
    expect(f.message).toMatch(/^registration failed: /);
    expect(f.message).not.toContain('wrong-password');
    await acts.deleteNode({ ref, nodeId });
  });
});
