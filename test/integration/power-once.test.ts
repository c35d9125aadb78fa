/**
 * Every power change reaches Ironic once (activities/ironic/power-send.ts), through the host workflow on the
 * real Temporal server and the real Ironic (fake-hardware), the worker's Ironic traffic behind the fault proxy.
 * The proxy plays a saturated Ironic: it leaves the power PUT unanswered (the connection closed under it) and
 * hands it to Ironic only once the worker has read the node again and got its answer, as Ironic serves a request
 * from its queue after the client gave up on it (a benchmark run: answered after 37 s, the client's timeout 30 s).
 * Before, the worker found no change under way on that read and sent the change again (Ironic answered the
 * second 409, or carried out both: a second reboot). Counted at the proxy: one PUT per change, the host where
 * asked, every operation succeeded.
 */
import { describe, expect, it } from 'vitest';
import { IronicClient, type IronicPowerTarget } from '../../clients/ironic/client';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import type { HostSpec } from '../../model/host';
import { isPowerChange, reachedPeer, type RecordedRequest } from '../../bench/support/ironic-proxy';
import { hostsRemovedAfterAll, useProxiedHarness } from '../support/proxied-harness';
import { FAST_HOST_OPTIONS, randomMac, uniq, waitFor } from '../support/harness';
import { IRONIC_URL } from '../support/env';

const NS = 'power-once';
const suite = useProxiedHarness({ hostOptions: { ...FAST_HOST_OPTIONS, softPowerOffSeconds: 5 } });
const created = hostsRemovedAfterAll(suite, NS);
/** The test's own view of Ironic, around the proxy. */
const ironic = new IronicClient({ url: IRONIC_URL });

const target = (r: RecordedRequest): string | undefined => (isPowerChange(r) ? (JSON.parse(r.body) as { target?: string }).target : undefined);

/**
 * The next power PUT on the node (to `powerTarget`, or any): left unanswered (its connection closed after 100 ms)
 * and handed to Ironic once the worker's next whole read of the node has been answered (the state before the
 * change, then), or after 20 s should no such read come. Resolves with that request once Ironic has been handed
 * it; fails when no such PUT comes within 60 s.
 */
function lateAnswer(nodeId: string, powerTarget?: IronicPowerTarget): Promise<RecordedRequest> {
  const { proxy } = suite;
  let caught: Promise<RecordedRequest> | undefined;
  proxy.interceptor = (r) => {
    if (!(r.path === `/v1/nodes/${nodeId}/states/power` && (powerTarget === undefined || target(r) === powerTarget))) return undefined;
    proxy.interceptor = undefined;
    const forwardWhen = new Promise<void>((release) => {
      proxy.onceAnswered((g) => g.method === 'GET' && g.path === `/v1/nodes/${nodeId}`, release);
      setTimeout(release, 20_000).unref();
    });
    caught = forwardWhen.then(() => r);
    return { kind: 'no-answer', ms: 100, forward: true, forwardWhen };
  };
  return waitFor(`a power PUT${powerTarget ? ` to ${powerTarget}` : ''} on node ${nodeId}`, async () => caught, { timeoutMs: 60_000, intervalMs: 100 });
}

/** The attempt each of the host's `activity` calls ended on (its ActivityTaskStarted), and how many failed for good. */
async function attempts(ref: { namespace: string; name: string }, activity: string): Promise<{ attempts: number[]; failed: number }> {
  const events = (await suite.h.client.workflow.getHandle(hostWorkflowId(ref)).fetchHistory()).events ?? [];
  const ids = new Set(events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === activity).map((e) => String(e.eventId)));
  const of = (id: unknown) => ids.has(String(id));
  return {
    attempts: events.filter((e) => of(e.activityTaskStartedEventAttributes?.scheduledEventId)).map((e) => e.activityTaskStartedEventAttributes!.attempt ?? 0),
    failed: events.filter((e) => of(e.activityTaskFailedEventAttributes?.scheduledEventId)).length,
  };
}

async function availableHost(over: Partial<HostSpec> = {}): Promise<{ ref: { namespace: string; name: string }; spec: HostSpec; nodeId: string; view: () => Promise<HostView> }> {
  const name = uniq('once');
  created.push(name);
  const ref = { namespace: NS, name };
  const view = (): Promise<HostView> => suite.h.client.workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery);
  const spec: HostSpec = { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` }, bootMACAddress: randomMac(), online: true, automatedCleaningMode: 'disabled', ...over };
  await suite.h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
  const ready = await waitFor('available and on', async () => {
    const v = await view();
    return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation ? v : undefined;
  }, { timeoutMs: 120_000 });
  return { ref, spec, nodeId: ready.status.provisioning.ID, view };
}

const idle = (view: () => Promise<HostView>, what: string, ok: (v: HostView) => boolean) =>
  waitFor(what, async () => {
    const v = await view();
    return !v.currentOperation && !v.power.reboot && ok(v) ? v : undefined;
  }, { timeoutMs: 120_000 });

describe('a power change whose answer is lost while Ironic has not yet taken it', { timeout: 300_000 }, () => {
  it('online false (a soft power off), then true, a reboot through off, the power off before delete: each target reaches Ironic once', async () => {
    const { h, proxy } = suite;
    const { ref, spec, nodeId, view } = await availableHost();
    const mark = proxy.requests.length;
    const targets = () => proxy.requests.slice(mark).filter((r) => r.path === `/v1/nodes/${nodeId}/states/power`).filter(reachedPeer).map(target);

    // changeNodePower: online false is a soft power off (as Metal3).
    let late = lateAnswer(nodeId);
    await h.hosts.put(ref, { spec: { ...spec, online: false } });
    expect((await late).injected).toBe('no answer, forwarded');
    await idle(view, 'off', (v) => !v.status.poweredOn);
    expect(targets()).toEqual(['soft power off']);

    // setPower: a plain power on.
    late = lateAnswer(nodeId);
    await h.hosts.put(ref, { spec });
    await late;
    await idle(view, 'on', (v) => v.status.poweredOn);
    expect(targets()).toEqual(['soft power off', 'power on']);
    expect((await ironic.getNode(nodeId))?.power_state).toBe('power on');

    // A reboot through off: its power off unanswered, judged by the node (and its step marked on it).
    late = lateAnswer(nodeId, 'power off');
    await h.hosts.reboot(ref, 'hard');
    await late;
    const rebooted = await idle(view, 'rebooted', (v) => v.operations.some((o) => o.kind === 'reboot' && o.outcome !== 'running'));
    expect(rebooted.operations.filter((o) => o.kind === 'reboot').map((o) => o.outcome)).toEqual(['succeeded']);
    expect(rebooted.status.poweredOn).toBe(true);
    expect(targets()).toEqual(['soft power off', 'power on', 'power off', 'power on']);
    expect((await ironic.getNode(nodeId))?.power_state).toBe('power on');

    // setPower: the power off before the node's delete.
    late = lateAnswer(nodeId);
    await h.hosts.remove(ref);
    await late;
    await h.client.workflow.getHandle(hostWorkflowId(ref)).result();
    expect(await ironic.getNode(nodeId)).toBeUndefined();
    expect(targets()).toEqual(['soft power off', 'power on', 'power off', 'power on', 'power off']);
    // Each call ended in its first attempt: the unanswered change was judged within it, not by Temporal's retry.
    for (const activity of ['changeNodePower', 'setPower']) {
      const ran = await attempts(ref, activity);
      expect(ran.failed).toBe(0);
      expect(ran.attempts.length).toBeGreaterThanOrEqual(2);
      expect(ran.attempts.every((a) => a === 1)).toBe(true);
    }
  });

  it('an in-place reboot (disablePowerOff: Ironic\'s rebooting) is sent once: no read tells a reboot done from one never sent', async () => {
    const { h, proxy } = suite;
    const { ref, nodeId, view } = await availableHost({ disablePowerOff: true });
    const mark = proxy.requests.length;
    const late = lateAnswer(nodeId, 'rebooting');
    await h.hosts.reboot(ref, 'hard');
    await late;
    const done = await idle(view, 'rebooted', (v) => v.operations.some((o) => o.kind === 'reboot' && o.outcome !== 'running'));
    expect(done.operations.filter((o) => o.kind === 'reboot').map((o) => o.outcome)).toEqual(['succeeded']);
    expect(done.status.poweredOn).toBe(true);
    expect(proxy.requests.slice(mark).filter((r) => r.path === `/v1/nodes/${nodeId}/states/power`).map(target)).toEqual(['rebooting']);
    const ran = await attempts(ref, 'changeNodePower');
    expect(ran.failed).toBe(0);
    expect(ran.attempts.every((a) => a === 1)).toBe(true);
  });
});
