/**
 * The worker's status write on the real kube-apiserver: a write by another
 * writer between its read and its write (the controller's node health
 * conditions) is read again, not overwritten, and a publish retried after it
 * wrote sends its Events once. An Event whose write fails is written again on
 * its own, through test/support's fault-injecting proxy in front of the real
 * API server: within the publish, and by a retry of the activity that does not
 * write the status again. The worker's status writer (the host workflow's sink)
 * writes the last status of a host and each Event once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeConfig } from '@kubernetes/client-node';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createHostStatusPublish, createKubernetesActivities } from '../../activities/kubernetes/host-status';
import { createHostStatusWriter } from '../../activities/kubernetes/status-writer';
import { KubeRest } from '../../clients/kubernetes/kube-rest';
import { emptyStatus } from '../../model/host';
import { statusWriteOrder } from '../../model/status-order';
import { uniq, waitFor } from '../support/harness';
import { IronicProxy, type RecordedRequest } from '../../bench/support/ironic-proxy';
import { KUBECONFIG, kubectl } from './kube-harness';
import { useKubeRest } from './kube-rest-suite';
import { hostDoc } from './manifests';

const NS = uniq('mf-status');
const kube = useKubeRest(NS);
const path = (name: string) => `/apis/metal3.io/v1alpha1/namespaces/${NS}/baremetalhosts/${name}`;
// Paused: no controller runs in this file, and none would start a workflow for it anyway.
const pausedHost = (name: string) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(hostDoc(name, { online: true }, { 'baremetalhost.metal3.io/paused': 'status test' })) });
interface Condition { type: string; status: string; reason: string }

describe("the worker's status write", () => {
  it("keeps a condition another writer set between the worker's read and its write", async () => {
    const name = uniq('race');
    kubectl(['apply', '-f', 'k8s/crds']);
    pausedHost(name);
    let raced = false;
    // The real API server throughout; the other writer's write lands right after the worker's first read.
    const rest = new Proxy(kube.rest, {
      get(target, prop, receiver) {
        if (prop !== 'call') return Reflect.get(target, prop, receiver) as unknown;
        return async (...args: Parameters<KubeRest['call']>) => {
          const result: unknown = await target.call(...args);
          if (!raced && args[0] === 'GET' && args[1] === path(name)) {
            raced = true;
            await target.call('PATCH', `${path(name)}/status`, {
              body: { status: { ...emptyStatus(), conditions: [{ type: 'Healthy', status: 'False', reason: 'Warning', message: 'from the controller', lastTransitionTime: '2026-12-01T00:00:00Z' }] } },
              contentType: 'application/merge-patch+json',
            });
          }
          return result;
        };
      },
    });
    const activities = createKubernetesActivities({ rest });
    expect(await activities.publishHostStatus({ ref: { namespace: NS, name }, status: { ...emptyStatus(), provisioning: { state: 'registering', ID: '' } } })).toEqual({ published: true });
    expect(raced).toBe(true);
    const status = (await kube.rest.call<{ status: { conditions: Condition[]; provisioning: { state: string } } }>('GET', path(name))).status;
    expect(status.provisioning.state).toBe('registering');
    expect(status.conditions.find((c) => c.type === 'Healthy')).toMatchObject({ status: 'False', reason: 'Warning' });
  });

  it('sends the Events of a publish once when the publish is retried', async () => {
    const name = uniq('events');
    pausedHost(name);
    const activities = createKubernetesActivities({ rest: kube.rest });
    const input = {
      ref: { namespace: NS, name },
      status: { ...emptyStatus(), lastUpdated: '2026-12-01T10:00:00Z', provisioning: { state: 'inspecting' as const, ID: 'n' } },
      event: { type: 'Normal' as const, reason: 'StateChanged', message: 'registering -> inspecting' },
    };
    await activities.publishHostStatus(input);
    // A retry of the same activity: its first attempt wrote, then failed before it could say so.
    await activities.publishHostStatus(input);
    const events = JSON.parse(kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']).stdout) as { items: { reason: string }[] };
    expect(events.items.filter((e) => e.reason === 'StateChanged')).toHaveLength(1);
  });
});

const isEventPost = (r: RecordedRequest) => r.method === 'POST' && r.path.startsWith(`/api/v1/namespaces/${NS}/events`);
const isStatusPatch = (name: string) => (r: RecordedRequest) => r.method === 'PATCH' && r.path === `${path(name)}/status`;
const eventsOf = (name: string, reason: string) =>
  (JSON.parse(kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']).stdout) as { items: { reason: string }[] }).items.filter((e) => e.reason === reason);

describe('an Event whose write fails', () => {
  let proxy: IronicProxy;
  let rest: KubeRest;
  beforeAll(async () => {
    // The proxy presents the admin's client certificate; the activity talks plain HTTP to it (no TLS to verify).
    const admin = new KubeConfig();
    admin.loadFromFile(KUBECONFIG);
    const tls: { ca?: Buffer; cert?: Buffer; key?: Buffer } = {};
    await admin.applyToHTTPSOptions(tls as never);
    proxy = new IronicProxy(admin.getCurrentCluster()!.server, tls);
    await proxy.start();
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'proxy', server: proxy.url, skipTLSVerify: true }],
      users: [{ name: 'proxied' }],
      contexts: [{ name: 'proxy', cluster: 'proxy', user: 'proxied' }],
      currentContext: 'proxy',
    });
    rest = await KubeRest.create(kc);
  });
  afterAll(() => proxy?.stop());

  const publishInput = (name: string, reason: string) => ({
    ref: { namespace: NS, name },
    status: { ...emptyStatus(), lastUpdated: '2026-12-01T11:00:00Z', provisioning: { state: 'inspecting' as const, ID: 'n' } },
    event: { type: 'Normal' as const, reason, message: 'registering -> inspecting' },
  });

  it('is written again within the publish: refused once, or written with its answer lost', async () => {
    for (const fault of ['503', 'answer lost'] as const) {
      const name = uniq('event-retry');
      pausedHost(name);
      const before = proxy.count(isEventPost);
      let first = true;
      proxy.interceptor = (r) => {
        if (!first || !isEventPost(r)) return undefined;
        first = false;
        return fault === '503' ? { kind: 'answer', status: 503, faultstring: 'etcd leader changed' } : { kind: 'no-answer', ms: 0, forward: true };
      };
      try {
        const env = new MockActivityEnvironment({ activityId: uniq('publish') });
        expect(await env.run(createKubernetesActivities({ rest }).publishHostStatus, publishInput(name, 'InspectionStarted'))).toEqual({ published: true });
      } finally {
        proxy.interceptor = undefined;
      }
      expect(proxy.count(isEventPost) - before).toBe(2);
      expect(eventsOf(name, 'InspectionStarted')).toHaveLength(1);
    }
  });

  it('HardwareData: created with the first hardware a host publishes, updated after (no PATCH that meets a 404 first)', async () => {
    const name = uniq('hwdata');
    pausedHost(name);
    const hd = (r: RecordedRequest) => r.path.startsWith(`/apis/metal3.io/v1alpha1/namespaces/${NS}/hardwaredata`);
    proxy.requests.length = 0;
    const publish = (ram: number) =>
      createKubernetesActivities({ rest }).publishHostStatus({
        ref: { namespace: NS, name },
        status: { ...emptyStatus(), provisioning: { state: 'preparing' as const, ID: 'n' }, hardware: { ramMebibytes: ram } },
      });
    expect(await publish(1024)).toEqual({ published: true });
    expect(proxy.requests.filter(hd).map((r) => r.method)).toEqual(['POST']);
    proxy.requests.length = 0;
    expect(await publish(2048)).toEqual({ published: true });
    expect(proxy.requests.filter(hd).map((r) => r.method)).toEqual(['POST', 'PATCH']);
    const data = JSON.parse(kubectl(['get', 'hardwaredata', '-n', NS, name, '-o', 'json']).stdout) as { spec: { hardware: { ramMebibytes: number } } };
    expect(data.spec.hardware.ramMebibytes).toBe(2048);
  });

  it("is sent by the activity's retry without writing the status again", async () => {
    const name = uniq('event-retry-act');
    pausedHost(name);
    const activityId = uniq('publish');
    // Attempt 1: the status is written; every Event write is refused, so the attempt fails.
    let eventsDown = true;
    proxy.interceptor = (r) => (eventsDown && isEventPost(r) ? { kind: 'answer', status: 503, faultstring: 'the server is currently unable to handle the request' } : undefined);
    const first = new MockActivityEnvironment({ activityId });
    const beats: unknown[] = [];
    first.on('heartbeat', (d: unknown) => beats.push(d));
    const input = publishInput(name, 'ProvisioningStarted');
    await expect(first.run(createKubernetesActivities({ rest }).publishHostStatus, input)).rejects.toThrow();
    expect(eventsOf(name, 'ProvisioningStarted')).toHaveLength(0);
    expect(proxy.count(isStatusPatch(name))).toBe(1);

    // Attempt 2, with what attempt 1 recorded: a status write now would be refused, and must not be sent.
    eventsDown = false;
    proxy.interceptor = undefined;
    proxy.fail(isStatusPatch(name), 1, 422, 'status refused now');
    const retry = new MockActivityEnvironment({ activityId, attempt: 2, heartbeatDetails: beats.at(-1) });
    expect(await retry.run(createKubernetesActivities({ rest }).publishHostStatus, input)).toEqual({ published: true });
    expect(proxy.count(isStatusPatch(name))).toBe(1);
    expect(eventsOf(name, 'ProvisioningStarted')).toHaveLength(1);
  });

  it("the worker's status writer: the last status wins, a write the API server did not take goes again, each Event once", async () => {
    const name = uniq('writer');
    pausedHost(name);
    const ref = { namespace: NS, name };
    const warned: string[] = [];
    const writer = createHostStatusWriter({ publish: createKubernetesActivities({ rest }).publishHostStatus, log: { warn: (m) => warned.push(m) } });
    const status = (state: 'registering' | 'inspecting' | 'available') => ({ ...emptyStatus(), provisioning: { state, ID: 'n' } });
    const event = (seed: string, reason: string) => ({ seed, event: { type: 'Normal' as const, reason, message: `test ${reason}` } });
    proxy.requests.length = 0;
    // The first status write is refused as by a busy API server; two more come while it is in flight.
    proxy.fail(isStatusPatch(name), 1, 503, 'the server is currently unable to handle the request');
    try {
      writer.write({ ref, status: status('registering'), events: [event('run/1/0', 'WriterRegistered')] });
      writer.write({ ref, status: status('inspecting'), events: [event('run/2/0', 'WriterInspecting')] });
      writer.write({ ref, status: status('available'), events: [event('run/3/0', 'WriterAvailable')] });
      await waitFor('all written', async () => writer.pending() === 0, { timeoutMs: 30_000, intervalMs: 100 });
      // The same write again, as a workflow task run a second time makes it: its Event is not recorded twice.
      writer.write({ ref, status: status('available'), events: [event('run/3/0', 'WriterAvailable')] });
      await waitFor('written again', async () => writer.pending() === 0, { timeoutMs: 30_000, intervalMs: 100 });
    } finally {
      writer.close();
    }
    // Refused, then the newest status (the middle one never sent), then the repeat.
    const states = proxy.requests.filter(isStatusPatch(name)).map((r) => (JSON.parse(r.body ?? '{}') as { status?: { provisioning?: { state?: string } } }).status?.provisioning?.state);
    expect(states).toEqual(['registering', 'available', 'available']);
    expect(warned).toHaveLength(1);
    for (const reason of ['WriterRegistered', 'WriterInspecting', 'WriterAvailable']) expect(eventsOf(name, reason)).toHaveLength(1);
    const object = await kube.rest.call<{ status: { provisioning: { state: string } } }>('GET', path(name));
    expect(object.status.provisioning.state).toBe('available');
  });

  it("an older write a worker still retries is not made over a later one another worker wrote (the workflow moved there); its Events are", async () => {
    const name = uniq('order');
    pausedHost(name);
    const ref = { namespace: NS, name };
    const log = { warn: () => undefined };
    // Worker A reaches the API server through the proxy, which refuses its status writes until worker B has written.
    const a = createHostStatusWriter({ publish: createKubernetesActivities({ rest }).publishHostStatus, log });
    const b = createHostStatusWriter({ publish: createKubernetesActivities({ rest: kube.rest }).publishHostStatus, log });
    const status = (state: 'inspecting' | 'available') => ({ ...emptyStatus(), provisioning: { state, ID: 'n' } });
    const event = (seed: string, reason: string) => ({ seed, event: { type: 'Normal' as const, reason, message: `test ${reason}` } });
    const at = Date.parse('2026-12-04T04:00:00Z');
    let bWrote = false;
    proxy.interceptor = (r) => (!bWrote && isStatusPatch(name)(r) ? { kind: 'answer', status: 503, faultstring: 'the server is currently unable to handle the request' } : undefined);
    const before = proxy.count(isStatusPatch(name));
    try {
      a.write({ ref, status: status('inspecting'), events: [event('run-a/1/0', 'OrderInspecting')], order: statusWriteOrder(at, 1) });
      await waitFor('A refused once', async () => proxy.count(isStatusPatch(name)) > before, { timeoutMs: 30_000, intervalMs: 50 });
      // The workflow moved to B, whose later task writes a later status.
      b.write({ ref, status: status('available'), events: [event('run-a/2/0', 'OrderAvailable')], order: statusWriteOrder(at + 5000, 2) });
      await waitFor('B written', async () => b.pending() === 0, { timeoutMs: 30_000, intervalMs: 50 });
      bWrote = true;
      await waitFor('A done', async () => a.pending() === 0, { timeoutMs: 30_000, intervalMs: 50 });
    } finally {
      proxy.interceptor = undefined;
      a.close();
      b.close();
    }
    const object = await kube.rest.call<{ status: { provisioning: { state: string }; lastUpdated: string } }>('GET', path(name));
    expect(object.status.provisioning.state).toBe('available');
    expect(object.status.lastUpdated).toBe('2026-12-04T04:00:05.000000002Z');
    // A's retry read the object and did not write: its one status PATCH is the refused one.
    expect(proxy.count(isStatusPatch(name)) - before).toBe(1);
    for (const reason of ['OrderInspecting', 'OrderAvailable']) expect(eventsOf(name, reason)).toHaveLength(1);
  });
});

describe("the worker's status writer against the object its last write answered", () => {
  const host = (name: string) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(hostDoc(name, { online: true })) });
  const hostPath = (name: string) => path(name);
  const isGet = (name: string) => (r: RecordedRequest) => r.method === 'GET' && r.path === hostPath(name);
  const isPatch = (name: string) => (r: RecordedRequest) => r.method === 'PATCH' && r.path === hostPath(name);
  let proxy: IronicProxy;
  let rest: KubeRest;
  beforeAll(async () => {
    const admin = new KubeConfig();
    admin.loadFromFile(KUBECONFIG);
    const tls: { ca?: Buffer; cert?: Buffer; key?: Buffer } = {};
    await admin.applyToHTTPSOptions(tls as never);
    proxy = new IronicProxy(admin.getCurrentCluster()!.server, tls);
    await proxy.start();
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'proxy', server: proxy.url, skipTLSVerify: true }],
      users: [{ name: 'proxied' }],
      contexts: [{ name: 'proxy', cluster: 'proxy', user: 'proxied' }],
      currentContext: 'proxy',
    });
    rest = await KubeRest.create(kc);
  });
  afterAll(() => proxy?.stop());

  const status = (state: 'registering' | 'inspecting' | 'available' | 'provisioning' | 'provisioned') => ({ ...emptyStatus(), provisioning: { state, ID: 'n' } });
  const object = (name: string) =>
    kube.rest.call<{ metadata: { annotations?: Record<string, string> }; status: { provisioning: { state: string }; conditions?: Condition[] } }>('GET', path(name));
  async function written(writer: ReturnType<typeof createHostStatusWriter>, ref: { namespace: string; name: string }, state: Parameters<typeof status>[0], hardware?: { ramMebibytes: number }): Promise<void> {
    writer.write({ ref, status: { ...status(state), ...(hardware ? { hardware } : {}) }, events: [] });
    await waitFor(`${state} written`, async () => writer.pending() === 0, { timeoutMs: 30_000, intervalMs: 50 });
  }

  it('reads the object only for its first write; a write by another writer meanwhile is read again, never overwritten', async () => {
    const name = uniq('known');
    host(name);
    const ref = { namespace: NS, name };
    const writer = createHostStatusWriter({ publish: createHostStatusPublish({ rest }), log: { warn: () => undefined } });
    try {
      proxy.requests.length = 0;
      await written(writer, ref, 'registering');
      // The first inventory: nothing on the object to replace, so no read for it either.
      await written(writer, ref, 'inspecting', { ramMebibytes: 1024 });
      // One read (the first write's); the block-move set after the first, from that write's answer, needed none either.
      expect(proxy.count(isGet(name))).toBe(1);
      expect(proxy.count(isStatusPatch(name))).toBe(2);
      // An inventory that replaces one is written from a fresh read (its merge patch needs the keys the object holds).
      await written(writer, ref, 'inspecting', { ramMebibytes: 2048 });
      expect(proxy.count(isGet(name))).toBe(2);
      // Another writer (the controller's node health) changes the status between two writes of the worker.
      await kube.rest.call('PATCH', `${path(name)}/status`, {
        body: { status: { conditions: [{ type: 'Healthy', status: 'False', reason: 'Warning', message: 'from the controller', lastTransitionTime: '2026-12-01T00:00:00Z' }] } },
        contentType: 'application/merge-patch+json',
      });
      proxy.requests.length = 0;
      await written(writer, ref, 'available');
      // Refused (the object changed), read again, written.
      expect(proxy.requests.filter((r) => isStatusPatch(name)(r) || isGet(name)(r)).map((r) => r.method)).toEqual(['PATCH', 'GET', 'PATCH']);
    } finally {
      writer.close();
    }
    const now = await object(name);
    expect(now.status.provisioning.state).toBe('available');
    expect(now.status.conditions?.find((c) => c.type === 'Healthy')).toMatchObject({ status: 'False', reason: 'Warning' });
  });

  it("sets clusterctl's block-move while the host is busy and lifts it at rest, after the status write; a paused host's stays the controller's", async () => {
    const name = uniq('block');
    host(name);
    const ref = { namespace: NS, name };
    const writer = createHostStatusWriter({ publish: createHostStatusPublish({ rest }), log: { warn: () => undefined } });
    try {
      proxy.requests.length = 0;
      await written(writer, ref, 'provisioning');
      expect((await object(name)).metadata.annotations).toHaveProperty(['clusterctl.cluster.x-k8s.io/block-move'], 'host is provisioning');
      await written(writer, ref, 'provisioned');
      expect((await object(name)).metadata.annotations ?? {}).not.toHaveProperty(['clusterctl.cluster.x-k8s.io/block-move']);
      // Set once, lifted once; a status write after each without a read in between.
      expect(proxy.count(isPatch(name))).toBe(2);
      expect(proxy.count(isGet(name))).toBe(1);
      // Paused (a move, a user): the writer leaves the annotations alone.
      kubectl(['annotate', '-n', NS, 'bmh', name, 'baremetalhost.metal3.io/paused=test']);
      await written(writer, ref, 'provisioning');
      expect((await object(name)).metadata.annotations ?? {}).not.toHaveProperty(['clusterctl.cluster.x-k8s.io/block-move']);
      expect(proxy.count(isPatch(name))).toBe(2);
    } finally {
      writer.close();
    }
  });
});
