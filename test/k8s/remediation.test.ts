/**
 * Remediation in Kubernetes mode, end to end: a real kube-apiserver, the
 * controller and a worker in Kubernetes mode as their own processes, the
 * test stack's Temporal and Ironic (fake-hardware power). No kubelet can run
 * here, so the test plays its part on a real Node object: it watches the
 * Node go, creates it again once the host is powered on and sets it Ready.
 * Remediations are started as workflows directly (the HostRemediation
 * resource is not built yet).
 */
import { describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import {
  REMEDIATION_ANNOTATIONS,
  remediationQuery,
  remediationWorkflowId,
  type RemediationInput,
  type RemediationView,
} from '../../contracts/remediation';
import type { RemediationRequest } from '../../model/remediation';
import { uniq, waitFor } from '../support/harness';
import { expireLostAttempts, runningOn } from '../support/lost-attempts';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';
import { kubeletRuns, setReady } from './play-kubelet';

const NS = uniq('mf-remed');
const TASK_QUEUE = uniq('tq-remed');
const suite = useShimSuite(NS, TASK_QUEUE);
const IMAGE = { url: 'http://127.0.0.1/images/remed.qcow2', checksum: 'e'.repeat(64), checksumType: 'sha256', format: 'qcow2' };
const LONG = 240_000;

interface KNode {
  metadata: { name: string; uid: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: { providerID?: string; taints?: { key: string; effect: string }[] };
}
interface Bmh {
  metadata: { uid: string; annotations?: Record<string, string> };
}

const apply = (doc: Record<string, unknown>) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc) });
const bmh = (name: string): Bmh => JSON.parse(kubectl(['get', 'bmh', name, '-n', NS, '-o', 'json']).stdout) as Bmh;
const node = (name: string): KNode | undefined => {
  const r = kubectl(['get', 'node', name, '-o', 'json'], { check: false });
  return r.status === 0 ? (JSON.parse(r.stdout) as KNode) : undefined;
};
const view = (name: string): Promise<HostView> => suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery);

/** A fake-hardware host brought to `state` (all hosts of the file at once: they provision side by side). */
function createHost(name: string, over: Record<string, unknown> = {}): void {
  apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'x' }));
  apply(hostDoc(name, fakeHostSpec(name, over)));
}
const waitState = (name: string, state: string) =>
  kubectl(['wait', '-n', NS, `--for=jsonpath={.status.provisioning.state}=${state}`, `bmh/${name}`, '--timeout=300s']);

/** What a kubelet does: registers the Node (labels, providerID) and reports it Ready with a fresh heartbeat. */
function kubeletRegisters(name: string, machine: { providerID: string; systemUUID: string }, labels: Record<string, string>, annotations: Record<string, string> = {}): void {
  kubectl(['create', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels, annotations }, spec: { providerID: machine.providerID } }),
  });
  setReady(name, machine.systemUUID, 'True');
}
interface Machine {
  host: string;
  node: string;
  providerID: string;
  systemUUID: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  poweredOn: () => Promise<boolean>;
}

/** The host's Node as CAPM3 leaves it: labelled metal3.io/uuid with the host's uid, plus the user's labels and annotations. */
function nodeFor(host: string): Machine {
  const uid = bmh(host).metadata.uid;
  const m: Machine = {
    host,
    node: uniq('node'),
    providerID: `metal3://${NS}/${host}/m3m-${host}`,
    systemUUID: randomUUID(),
    labels: { 'metal3.io/uuid': uid, 'node-role.kubernetes.io/worker': '', 'example.com/rack': 'r7' },
    annotations: { 'example.com/owner': 'team-a', 'example.com/note': '{"json":true}' },
    poweredOn: async () => (await view(host)).status.poweredOn,
  };
  kubeletRegisters(m.node, m, m.labels, m.annotations);
  return m;
}

async function startRemediation(host: string, request: RemediationRequest): Promise<WorkflowHandle> {
  const uid = randomUUID();
  const input: RemediationInput = { ref: { namespace: NS, name: host }, uid, request, kubernetes: true };
  return suite.client.workflow.start('remediateWorkflow', { taskQueue: TASK_QUEUE, workflowId: remediationWorkflowId(input.ref, uid), args: [input] });
}
const result = (h: WorkflowHandle): Promise<RemediationView> => h.result() as Promise<RemediationView>;
const query = (h: WorkflowHandle): Promise<RemediationView> => h.query(remediationQuery);

/** Power changes (operations that succeeded) the host made since `since` (ISO). */
async function powerChanges(host: string, since: string): Promise<number> {
  return (await view(host)).operations.filter((o) => o.kind === 'power' && o.outcome === 'succeeded' && o.startedAt >= since).length;
}

/**
 * The host's power-off (its first power operation since `since`) ended before the remediation
 * scheduled `activity` (the Node's deletion or taint): read from the host workflow's own record and
 * the remediation's history, not from a view polled afterwards (the release follows within ms).
 */
async function poweredOffBefore(h: WorkflowHandle, host: string, since: string, activity: string): Promise<void> {
  const off = (await view(host)).operations.find((o) => o.kind === 'power' && o.startedAt >= since);
  expect(off).toMatchObject({ outcome: 'succeeded' });
  let at: number | undefined;
  for (const e of (await h.fetchHistory()).events ?? []) {
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === activity && e.eventTime) {
      at = Number(e.eventTime.seconds ?? 0) * 1000 + Math.floor((e.eventTime.nanos ?? 0) / 1e6);
      break;
    }
  }
  expect(at, `${activity} scheduled`).toBeDefined();
  expect(Date.parse(off!.endedAt!)).toBeLessThanOrEqual(at!);
}

/** How many times an activity completed in the workflow's history. */
async function completed(h: WorkflowHandle, activity: string): Promise<number> {
  const history = await h.fetchHistory();
  const scheduled = new Map<string, string>();
  let n = 0;
  for (const e of history.events ?? []) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s?.activityType?.name) scheduled.set(String(e.eventId), s.activityType.name);
    const c = e.activityTaskCompletedEventAttributes;
    if (c && scheduled.get(String(c.scheduledEventId)) === activity) n += 1;
  }
  return n;
}

/** Plays the kubelet through one Delete-path power cycle: waits for the Node to go (checking the host is off by then), then comes back. */
async function kubeletThroughDelete(m: Machine, onGone?: () => Promise<void>): Promise<void> {
  await waitFor(`Node ${m.node} deleted`, async () => node(m.node) === undefined, { timeoutMs: LONG, intervalMs: 250 });
  const backup = bmh(m.host).metadata.annotations ?? {};
  expect(JSON.parse(backup[REMEDIATION_ANNOTATIONS.labelsBackup] ?? '{}')).toEqual(m.labels);
  expect(JSON.parse(backup[REMEDIATION_ANNOTATIONS.annotationsBackup] ?? '{}')).toEqual(m.annotations);
  await onGone?.();
  // The machine boots again once its power-off request is released; its kubelet registers a bare Node.
  await waitFor('host powered on again', async () => (await view(m.host)).status.poweredOn, { timeoutMs: LONG });
  kubeletRegisters(m.node, m, { 'kubernetes.io/hostname': m.node });
}

/** The retryLimit-2 remediation: it waits out two timeouts (40 s) while the other tests run on their own hosts. */
let neverReturns: { h: WorkflowHandle; since: string } | undefined;

const HOSTS = { deleted: uniq('del'), taint: uniq('taint'), timeout: uniq('tmo'), offline: uniq('off'), crash: uniq('crash'), crd: uniq('crd'), serial: uniq('serial'), noOff: uniq('nooff'), reprov: uniq('reprov') };

describe('remediation (reboot strategy) on a real API server', () => {
  it('hosts come up', async () => {
    createHost(HOSTS.deleted, { image: IMAGE });
    createHost(HOSTS.crash, { image: IMAGE });
    createHost(HOSTS.reprov, { image: IMAGE });
    createHost(HOSTS.taint);
    createHost(HOSTS.timeout);
    createHost(HOSTS.offline, { online: false });
    createHost(HOSTS.crd);
    createHost(HOSTS.serial);
    createHost(HOSTS.noOff, { disablePowerOff: true });
    waitState(HOSTS.deleted, 'provisioned');
    waitState(HOSTS.crash, 'provisioned');
    waitState(HOSTS.reprov, 'provisioned');
    for (const h of [HOSTS.taint, HOSTS.timeout, HOSTS.offline, HOSTS.crd, HOSTS.serial, HOSTS.noOff]) waitState(h, 'available');
    kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/hostremediations.metalflow.io']);
  }, 600_000);

  it('retryLimit 2 and a Node that never returns: started now, checked last (its two timeouts run beside the other tests)', async () => {
    nodeFor(HOSTS.timeout);
    const since = new Date().toISOString();
    // The API refuses timeoutSeconds under 100 (CAPM3's minimum); the workflow started directly takes 20 to keep the test short
    // (the file's other tests take longer than the two timeouts; each power-off, its only step that must fit in a timeout,
    // takes a few seconds on fake hardware).
    const h = await startRemediation(HOSTS.timeout, { strategy: { type: 'Reboot', retryLimit: 2, timeoutSeconds: 20 }, nodeHandling: 'Delete' });
    neverReturns = { h, since };
  });

  it('Delete path: powered off before the Node is deleted, labels and annotations backed up and restored once', async () => {
    const m = nodeFor(HOSTS.deleted);
    const since = new Date().toISOString();
    const h = await startRemediation(HOSTS.deleted, { strategy: { type: 'Reboot' }, nodeHandling: 'Delete' });
    await kubeletThroughDelete(m);
    const r = await kubeletRuns(m, result(h));
    expect(r).toMatchObject({ outcome: 'succeeded', phase: 'Waiting', retryCount: 1, restored: true });
    expect(r.lastRemediated).toBeDefined();
    const back = node(m.node)!;
    expect(back.metadata.labels).toEqual({ ...m.labels, 'kubernetes.io/hostname': m.node });
    expect(back.metadata.annotations).toMatchObject(m.annotations);
    const annotations = bmh(HOSTS.deleted).metadata.annotations ?? {};
    expect(Object.keys(annotations).filter((k) => k.startsWith('remediation.metal3.io/') || k.startsWith('reboot.metal3.io/'))).toEqual([]);
    expect(await completed(h, 'restoreNode')).toBe(1);
    // Power off happens before the Node is deleted.
    await poweredOffBefore(h, HOSTS.deleted, since, 'deleteHostNode');
    // One power cycle: off, then on.
    expect(await powerChanges(HOSTS.deleted, since)).toBe(2);
    expect((await view(HOSTS.deleted)).power.holds).toEqual({});
  }, LONG * 2);

  it('out-of-service taint path: tainted once off, untainted once Ready again; the Node is never deleted', async () => {
    const m = nodeFor(HOSTS.taint);
    const original = node(m.node)!.metadata.uid;
    const since = new Date().toISOString();
    const h = await startRemediation(HOSTS.taint, { strategy: { type: 'Reboot' } });
    await waitFor('the out-of-service taint', async () => node(m.node)?.spec?.taints?.some((t) => t.key === REMEDIATION_ANNOTATIONS.outOfServiceTaint), { timeoutMs: LONG, intervalMs: 250 });
    await poweredOffBefore(h, HOSTS.taint, since, 'taintNodeOutOfService');
    setReady(m.node, m.systemUUID, 'False');
    await waitFor('host powered on again', async () => (await view(HOSTS.taint)).status.poweredOn, { timeoutMs: LONG });
    const r = await kubeletRuns(m, result(h));
    expect(r).toMatchObject({ outcome: 'succeeded', nodeHandling: 'OutOfServiceTaint', retryCount: 1 });
    const after = node(m.node)!;
    expect(after.metadata.uid).toBe(original);
    // (The API server's own not-ready taint from the Node's creation stays: no node lifecycle controller runs here.)
    expect((after.spec?.taints ?? []).map((t) => t.key)).not.toContain(REMEDIATION_ANNOTATIONS.outOfServiceTaint);
    expect(after.metadata.labels).toEqual(m.labels);
  }, LONG * 2);

  it('the API server refuses a HostRemediation outside CAPM3\'s bounds, naming the field', () => {
    const r = kubectl(['apply', '-n', NS, '-f', '-'], {
      check: false,
      input: JSON.stringify({ apiVersion: 'metalflow.io/v1alpha1', kind: 'HostRemediation', metadata: { name: 'bad' }, spec: { hostName: HOSTS.offline, strategy: { type: 'Reboot', retryLimit: 0, timeoutSeconds: 99 } } }),
    });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/spec\.strategy\.retryLimit/);
    expect(r.stderr).toMatch(/spec\.strategy\.timeoutSeconds/);
  });

  it('the API server refuses a HostRemediation with reinspect but no reprovision (CEL rule), naming the field', () => {
    const r = kubectl(['apply', '-n', NS, '-f', '-'], {
      check: false,
      input: JSON.stringify({ apiVersion: 'metalflow.io/v1alpha1', kind: 'HostRemediation', metadata: { name: 'unpaired' }, spec: { hostName: HOSTS.offline, strategy: { type: 'Reboot', reinspect: {} } } }),
    });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/spec\.strategy\.reinspect: .*reinspect needs reprovision/);
  });

  it('re-provision (opt-in): the Node not back after the reboot, the BareMetalHost\'s image removed and put back, then the Node back and restored once', async () => {
    const m = nodeFor(HOSTS.reprov);
    const since = new Date().toISOString();
    // The workflow started directly takes a short timeout (the test waits it out once, after the power-off); the test's kubelet
    // stays away until the host is re-provisioned, then comes back within a second or two, well inside the same timeout.
    const h = await startRemediation(HOSTS.reprov, { strategy: { type: 'Reboot', timeoutSeconds: 12, reprovision: {} }, nodeHandling: 'Delete' });
    await waitFor('the re-provision done', async () => (await query(h)).steps.some((x) => x.step.startsWith('re-provisioned with the same image')), { timeoutMs: 600_000 });
    kubeletRegisters(m.node, m, { 'kubernetes.io/hostname': m.node });
    const r = await kubeletRuns(m, result(h));
    expect(r, r.message).toMatchObject({ outcome: 'succeeded', phase: 'Waiting', retryCount: 1, reprovisioned: 'succeeded', restored: true });
    expect(node(m.node)!.metadata.labels).toEqual({ ...m.labels, 'kubernetes.io/hostname': m.node });
    expect(await completed(h, 'restoreNode')).toBe(1);
    // Through the BareMetalHost (its spec.image removed, then the same image put back), never Ironic.
    const spec = JSON.parse(kubectl(['get', 'bmh', HOSTS.reprov, '-n', NS, '-o', 'jsonpath={.spec.image}']).stdout) as unknown;
    expect(spec).toEqual(IMAGE);
    const ops = (await view(HOSTS.reprov)).operations.filter((o) => o.startedAt >= since && (o.kind === 'deprovision' || o.kind === 'provision'));
    expect(ops.map((o) => `${o.kind}:${o.outcome}`)).toEqual(['deprovision:succeeded', 'provision:succeeded']);
  }, 900_000);

  it('online: false is refused and nothing changes', async () => {
    const m = nodeFor(HOSTS.offline);
    const before = bmh(HOSTS.offline).metadata.annotations ?? {};
    const h = await startRemediation(HOSTS.offline, { strategy: { type: 'Reboot' }, nodeHandling: 'Delete' });
    const r = await result(h);
    expect(r).toMatchObject({ outcome: 'refused', phase: 'Failed', retryCount: 0 });
    expect(r.message).toMatch(/spec\.online is false/);
    expect(bmh(HOSTS.offline).metadata.annotations ?? {}).toEqual(before);
    expect(node(m.node)?.metadata.uid).toBeDefined();
  }, LONG);

  it('worker SIGKILLed after the Node was deleted, before it returned: one power cycle, labels restored once', async () => {
    const m = nodeFor(HOSTS.crash);
    const since = new Date().toISOString();
    const h = await startRemediation(HOSTS.crash, { strategy: { type: 'Reboot' }, nodeHandling: 'Delete' });
    await kubeletThroughDelete(m, async () => {
      const killed = suite.shim.running('worker')!;
      killed.kill('SIGKILL');
      suite.shim.startWorker();
      // The wait the killed worker held, given up by the server now rather than at its heartbeat timeout.
      await expireLostAttempts(suite.client, killed.pid!, await runningOn(suite.client, TASK_QUEUE));
    });
    const r = await kubeletRuns(m, result(h));
    expect(r).toMatchObject({ outcome: 'succeeded', retryCount: 1, restored: true });
    expect(node(m.node)!.metadata.labels).toEqual({ ...m.labels, 'kubernetes.io/hostname': m.node });
    expect(await completed(h, 'restoreNode')).toBe(1);
    expect(await powerChanges(HOSTS.crash, since)).toBe(2);
  }, LONG * 2);

  it('a HostRemediation starts the remediation and gets its status; deleting one cancels it and releases the power-off request', async () => {
    const m = nodeFor(HOSTS.crd);
    const hrem = (name: string, spec: Record<string, unknown>) =>
      apply({ apiVersion: 'metalflow.io/v1alpha1', kind: 'HostRemediation', metadata: { name }, spec: { hostName: HOSTS.crd, ...spec } });
    const status = (name: string): Record<string, unknown> =>
      (JSON.parse(kubectl(['get', 'hostremediation', name, '-n', NS, '-o', 'json']).stdout) as { status?: Record<string, unknown> }).status ?? {};
    hrem('first', { strategy: { type: 'Reboot' } });
    await waitFor('the out-of-service taint', async () => node(m.node)?.spec?.taints?.some((t) => t.key === REMEDIATION_ANNOTATIONS.outOfServiceTaint), { timeoutMs: LONG, intervalMs: 250 });
    await waitFor('host powered on again', async () => (await view(HOSTS.crd)).status.poweredOn, { timeoutMs: LONG });
    await kubeletRuns(m, waitFor('status succeeded', async () => status('first').outcome === 'succeeded', { timeoutMs: LONG, intervalMs: 500 }));
    expect(status('first')).toMatchObject({ phase: 'Waiting', retryCount: 1, workflowId: expect.stringMatching(/^remediation\//) });
    expect(status('first').lastRemediated).toEqual(expect.any(String));

    // A second one whose Node never comes back, deleted while it waits.
    hrem('second', { strategy: { type: 'Reboot', timeoutSeconds: 3600 }, nodeHandling: 'Delete' });
    await waitFor('phase Waiting', async () => status('second').phase === 'Waiting', { timeoutMs: LONG, intervalMs: 500 });
    const workflowId = String(status('second').workflowId);
    kubectl(['delete', 'hostremediation', 'second', '-n', NS]);
    const handle = suite.client.workflow.getHandle(workflowId);
    await waitFor('cancelled', async () => (await handle.describe()).status.name === 'CANCELLED', { timeoutMs: LONG });
    const annotations = bmh(HOSTS.crd).metadata.annotations ?? {};
    expect(Object.keys(annotations).filter((k) => k.startsWith('reboot.metal3.io/'))).toEqual([]);
    expect(annotations[REMEDIATION_ANNOTATIONS.labelsBackup]).toBeDefined();
  }, LONG * 2);

  it('two HostRemediations of one host: the second is queued, naming the first, and starts only once the first has ended', async () => {
    const m = nodeFor(HOSTS.serial);
    const since = new Date().toISOString();
    const doc = (name: string) => ({ apiVersion: 'metalflow.io/v1alpha1', kind: 'HostRemediation', metadata: { name }, spec: { hostName: HOSTS.serial, strategy: { type: 'Reboot' } } });
    kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [doc('serial-a'), doc('serial-b')] }) });
    const object = (name: string) =>
      JSON.parse(kubectl(['get', 'hostremediation', name, '-n', NS, '-o', 'json']).stdout) as { metadata: { uid: string }; status?: { outcome?: string; message?: string } };
    await waitFor('one queued', async () => ['serial-a', 'serial-b'].some((n) => object(n).status?.outcome === 'queued'), { timeoutMs: LONG, intervalMs: 250 });
    const [first, second] = object('serial-a').status?.outcome === 'queued' ? ['serial-b', 'serial-a'] : ['serial-a', 'serial-b'];
    expect(object(second).status?.message).toMatch(new RegExp(`HostRemediation ${first} of host ${HOSTS.serial} runs first`));
    const workflowOf = (name: string) => suite.client.workflow.getHandle(remediationWorkflowId({ namespace: NS, name: HOSTS.serial }, object(name).metadata.uid));
    await expect(workflowOf(second).describe()).rejects.toThrow(WorkflowNotFoundError);

    await kubeletRuns(m, waitFor('both succeeded', async () => [first, second].every((n) => object(n).status?.outcome === 'succeeded'), { timeoutMs: LONG * 2, intervalMs: 500 }));
    // The second started only after the first's last step (its status written as ended, after its release).
    const steps = ((await workflowOf(first).fetchHistory()).events ?? []).filter((e) => e.activityTaskScheduledEventAttributes);
    const last = steps[steps.length - 1]!.eventTime!;
    expect(Number(last.seconds) * 1000 + Math.floor((last.nanos ?? 0) / 1e6)).toBeLessThanOrEqual((await workflowOf(second).describe()).startTime.getTime());
    // Two power cycles, one after the other.
    expect(await powerChanges(HOSTS.serial, since)).toBe(4);
  }, LONG * 3);

  it('a spec.disablePowerOff host is rebooted, never powered off, and its Node tainted only once the reboot has run', async () => {
    const m = nodeFor(HOSTS.noOff);
    const since = new Date().toISOString();
    const h = await startRemediation(HOSTS.noOff, { strategy: { type: 'Reboot' } });
    await waitFor('the out-of-service taint', async () => node(m.node)?.spec?.taints?.some((t) => t.key === REMEDIATION_ANNOTATIONS.outOfServiceTaint), { timeoutMs: LONG, intervalMs: 250 });
    const rebooted = (await view(HOSTS.noOff)).operations.find((o) => o.kind === 'reboot' && o.startedAt >= since);
    expect(rebooted).toMatchObject({ outcome: 'succeeded' });
    const r = await kubeletRuns(m, result(h));
    expect(r).toMatchObject({ outcome: 'succeeded', retryCount: 1 });
    expect(r.steps.map((s) => s.step)).toContain('the host rebooted');
    const ops = (await view(HOSTS.noOff)).operations.filter((o) => o.startedAt >= since);
    expect(ops.map((o) => o.kind)).toEqual(['reboot']);
    expect((await view(HOSTS.noOff)).power.holds).toEqual({});
    expect(Object.keys(bmh(HOSTS.noOff).metadata.annotations ?? {}).filter((k) => k.startsWith('reboot.metal3.io/'))).toEqual([]);
  }, LONG * 2);

  it('retryLimit 2 and a Node that never returns: two power cycles, then capm3.metal3.io/unhealthy and Failed', async () => {
    const { h, since } = neverReturns!;
    const r = await result(h);
    expect(r).toMatchObject({ outcome: 'failed', phase: 'Failed', retryCount: 2, hostUnhealthy: true });
    expect(r.steps.map((s) => s.step)).toContain('retry limit 2 reached: marking the host capm3.metal3.io/unhealthy');
    expect(bmh(HOSTS.timeout).metadata.annotations?.[REMEDIATION_ANNOTATIONS.unhealthy]).toBe('');
    await waitFor('host powered on after the last release', async () => (await view(HOSTS.timeout)).status.poweredOn, { timeoutMs: LONG });
    expect(await powerChanges(HOSTS.timeout, since)).toBe(4);
  }, LONG * 2);
});
