/**
 * Ironic's back-pressure waited out inside the activity attempt
 * (activities/ironic/back-pressure.ts), through the host workflow on the real
 * Temporal server, with the worker's Ironic traffic behind the fault proxy in
 * front of the real Ironic. The proxy answers verbs as a saturated Ironic does:
 * its own 503 (test/support/ironic-busy.ts, Ironic's bytes: the concurrent
 * action limit, no free conductor worker, no conductor for the node), or the
 * verb carried out and its answer held past the worker's request timeout.
 * Each time the activity's one attempt waits and asks again (a refused verb
 * sent again, an unanswered one judged from the node's sent marker and not
 * sent again), Ironic accepts each verb once, and the host ends where asked.
 * Before, each of these failed the attempt and the host waited out Temporal's
 * retry backoff.
 */
import { describe, expect, it } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import type { HostSpec } from '../../model/host';
import { isDeploy, isPowerChange, type RecordedRequest } from '../../bench/support/ironic-proxy';
import { hostsRemovedAfterAll, useProxiedHarness } from '../support/proxied-harness';
import { FAST_HOST_OPTIONS, randomMac, uniq, waitFor } from '../support/harness';
import { IRONIC_URL } from '../support/env';
import { concurrentActionLimit, NO_FREE_CONDUCTOR_WORKER, TEMPORARY_FAILURE } from '../support/ironic-busy';

const NS = 'back-pressure';
/** The worker's Ironic requests time out after this; the proxy holds one answer longer. */
const REQUEST_TIMEOUT_MS = 4000;
const suite = useProxiedHarness({ ironicRequestTimeoutMs: REQUEST_TIMEOUT_MS, hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 0 } });
const created = hostsRemovedAfterAll(suite, NS);
/** The test's own view of Ironic, around the proxy. */
const ironic = new IronicClient({ url: IRONIC_URL });

const provisionVerb = (target: string) => (r: RecordedRequest): boolean => r.method === 'PUT' && r.path.endsWith('/states/provision') && (JSON.parse(r.body) as { target?: string }).target === target;
/** Requests Ironic itself answered with success (not the proxy's injected 503s, whose status stays unset). */
const accepted = (r: RecordedRequest): boolean => r.status !== undefined && r.status < 300;

/** The attempt each of the host's `activity` calls ended on (its ActivityTaskStarted), and how many completed. */
async function attempts(ref: { namespace: string; name: string }, activity: string): Promise<{ attempts: number[]; completed: number }> {
  const events = (await suite.h.client.workflow.getHandle(hostWorkflowId(ref)).fetchHistory()).events ?? [];
  const ids = new Set(events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === activity).map((e) => String(e.eventId)));
  const of = (id: unknown) => ids.has(String(id));
  return {
    attempts: events.filter((e) => of(e.activityTaskStartedEventAttributes?.scheduledEventId)).map((e) => e.activityTaskStartedEventAttributes!.attempt ?? 0),
    completed: events.filter((e) => of(e.activityTaskCompletedEventAttributes?.scheduledEventId)).length,
  };
}

describe("Ironic's back-pressure, waited out within the activity attempt", () => {
  it('deploy refused twice (concurrent action limit), undeploy unanswered, power off and delete refused: one attempt each, each verb accepted once', { timeout: 120_000 }, async () => {
    const { h, proxy } = suite;
    // Counted from here: a retry of this test (vitest retries) runs beside the first try's requests.
    const mark = proxy.requests.length;
    const sent = (match: (r: RecordedRequest) => boolean) => proxy.requests.slice(mark).filter(match);
    const name = uniq('bp');
    created.push(name);
    const ref = { namespace: NS, name };
    const view = (): Promise<HostView> => h.client.workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery);
    const spec: HostSpec = {
      bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` },
      bootMACAddress: randomMac(),
      online: true,
      image: { url: 'http://127.0.0.1/img.qcow2', checksum: 'd'.repeat(64), format: 'qcow2' },
    };
    // The proxy is this file's: only this host's worker goes through it.
    proxy.answerRaw(isDeploy, 2, 503, concurrentActionLimit('provisioning'));
    await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
    const provisioned = await waitFor('provisioned', async () => {
      const v = await view();
      return v.status.provisioning.state === 'provisioned' && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 90_000 });
    const nodeId = provisioned.status.provisioning.ID;
    const deploys = sent(isDeploy);
    expect(deploys).toHaveLength(3);
    expect(deploys.filter(accepted)).toHaveLength(1);
    expect(await attempts(ref, 'deployNode')).toEqual({ attempts: [1], completed: 1 });

    // Ironic carries the undeploy out, and its answer comes after the worker stopped waiting for it.
    const undeploy = provisionVerb('deleted');
    proxy.onceAnswered(undeploy, () => new Promise((r) => setTimeout(r, REQUEST_TIMEOUT_MS + 1500)));
    await h.hosts.setImage(ref, null);
    const available = await waitFor('deprovisioned', async () => {
      const v = await view();
      return v.status.provisioning.state === 'available' && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 90_000 });
    expect(available.operations.filter((o) => o.kind === 'deprovision').map((o) => o.outcome)).toEqual(['succeeded']);
    // Sent once: the unanswered verb was found carried out by its sent marker, not sent blind again.
    expect(sent(undeploy)).toHaveLength(1);
    expect((await ironic.getNode(nodeId))?.provision_state).toBe('available');
    expect(await attempts(ref, 'undeployNode')).toEqual({ attempts: [1], completed: 1 });

    // The delete: a power off refused twice (no free conductor worker), the node's DELETE once (no conductor).
    const powerOff = (r: RecordedRequest) => isPowerChange(r) && r.path.includes(nodeId) && r.body.includes('"power off"');
    const deletion = (r: RecordedRequest) => r.method === 'DELETE' && r.path === `/v1/nodes/${nodeId}`;
    const poweredOn = (await ironic.getNode(nodeId))?.power_state === 'power on';
    proxy.answerRaw(powerOff, 2, 503, NO_FREE_CONDUCTOR_WORKER);
    proxy.answerRaw(deletion, 1, 503, TEMPORARY_FAILURE);
    await h.hosts.remove(ref);
    await h.client.workflow.getHandle(hostWorkflowId(ref)).result();
    expect(await ironic.getNode(nodeId)).toBeUndefined();
    expect(sent(deletion)).toHaveLength(2);
    expect(sent(deletion).filter(accepted)).toHaveLength(1);
    expect(await attempts(ref, 'deleteNode')).toEqual({ attempts: [1], completed: 1 });
    if (poweredOn) {
      expect(sent(powerOff)).toHaveLength(3);
      expect(sent(powerOff).filter(accepted)).toHaveLength(1);
      const power = await attempts(ref, 'setPower');
      expect(power.attempts.every((a) => a === 1)).toBe(true);
    }
  });
});
