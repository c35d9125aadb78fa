/**
 * A cancel with abortInFlight on deprovision and delete fleets, on the real
 * stack: Ironic requests held at the fault proxy keep the hosts' steps under
 * way when the abort arrives. A running deprovision ends (half a teardown is
 * no state to leave a host in); one that had not begun never runs and the
 * host gets its image back; a delete stops with the host paused and still to
 * be deleted, and goes on once unpaused. Never a failure.
 */
import { describe, expect, it } from 'vitest';
import { uniq, waitFor } from '../support/harness';
import { callApi } from '../support/api-client';
import { isPowerChange, type RecordedRequest } from '../../bench/support/ironic-proxy';
import { availableHosts, fleetEnded, startFleet, useFleetStack, waitForFleet, waitForHost } from '../support/fleet-hosts';
import { hostRun } from '../../control/host-run';

const stack = useFleetStack({ proxied: true });

const IMAGE = { url: 'http://127.0.0.1/teardown.qcow2', checksum: 'd'.repeat(32), checksumType: 'md5', format: 'qcow2' };
const HOLD_MS = 15_000;
const onNode = (nodeId: string, match: (r: RecordedRequest) => boolean) => (r: RecordedRequest) => r.path.includes(`/nodes/${nodeId}/`) && match(r);
const isUndeploy = (r: RecordedRequest) => r.method === 'PUT' && /\/states\/provision$/.test(r.path) && /"target":\s*"deleted"/.test(r.body);

describe('fleet abortInFlight on deprovision and delete', { timeout: 600_000 }, () => {
  it('deprovision: the running one ends, the one not begun never runs and keeps its image; cancelled, not failed', async () => {
    const ns = uniq('fleet');
    const hosts = await availableHosts(stack.base, stack.h, ns, ['td-a', 'td-b', 'td-c'], {});
    for (const x of hosts) expect((await callApi(stack.base, 'PUT', `/v1/namespaces/${ns}/hosts/${x.name}/image`, IMAGE)).status).toBe(200);
    const views = await Promise.all(hosts.map((x) => waitForHost(stack.h, x, (v) => v.status.provisioning.state === 'provisioned' && !v.currentOperation, 'provisioned')));
    const [a, b] = views.map((v) => v.status.provisioning.ID);
    // td-a's teardown is held at the proxy; td-b is rebooting (its power change held), so its deprovision waits behind it.
    stack.proxy.hold(onNode(a!, isUndeploy), HOLD_MS);
    stack.proxy.hold(onNode(b!, isPowerChange), HOLD_MS);
    expect((await callApi(stack.base, 'POST', `/v1/namespaces/${ns}/hosts/td-b/reboot`, { mode: 'hard' })).status).toBe(202);
    await waitForHost(stack.h, hosts[1]!, (v) => v.currentOperation?.kind === 'reboot', 'rebooting');

    const name = uniq('deprov');
    await startFleet(stack.base, { name, operation: { kind: 'deprovision' }, selector: { namespace: ns }, maxConcurrent: 2 });
    await waitForHost(stack.h, hosts[0]!, (v) => v.currentOperation?.kind === 'deprovision', 'deprovisioning');
    await waitForHost(stack.h, hosts[1]!, (v) => v.spec?.image === undefined && v.currentOperation?.kind === 'reboot', 'asked to deprovision, still rebooting');
    const res = await callApi(stack.base, 'POST', `/v1/fleet-operations/${name}/cancel`, { reason: 'wrong rack', abortInFlight: true });
    expect(res.status, res.text).toBe(200);

    const done = await waitForFleet(stack.base, name, fleetEnded, 'ended');
    const why = `fleet operation ${name} aborted: wrong rack`;
    expect(done.phase).toBe('cancelled');
    expect(done.counts).toMatchObject({ succeeded: 1, cancelled: 1, notStarted: 1, failed: 0, skipped: 0, inFlight: 0 });
    expect(done.hosts[1]).toMatchObject({ outcome: 'cancelled', reason: `deprovision cancelled before it ran (${why}): its image ${IMAGE.url} is back in its spec, nothing changed on the host` });

    // td-a: its teardown ran to its end (available), and it stays paused.
    const va = await stack.h.hosts.get(hosts[0]!);
    expect(va.status.provisioning.state).toBe('available');
    expect(va.operations.filter((o) => o.kind === 'deprovision').map((o) => o.outcome)).toEqual(['succeeded']);
    expect(va.paused?.reason).toBe(why);
    // td-b: never deprovisioned, its image back in its spec, paused: unpausing it changes nothing.
    const vb = await stack.h.hosts.get(hosts[1]!);
    expect(vb.operations.filter((o) => o.kind === 'deprovision')).toEqual([]);
    expect(vb.spec?.image?.url).toBe(IMAGE.url);
    expect(vb.status.provisioning).toMatchObject({ state: 'provisioned', image: { url: IMAGE.url } });
    expect(vb.paused?.reason).toBe(why);
    expect(stack.proxy.count(onNode(b!, isUndeploy))).toBe(0);
    expect((await callApi(stack.base, 'DELETE', `/v1/namespaces/${ns}/hosts/td-b/paused`)).status).toBe(200);
    await waitForHost(stack.h, hosts[1]!, (v) => !v.paused && !v.currentOperation, 'unpaused and idle');
    expect((await stack.h.hosts.get(hosts[1]!)).status.provisioning.state).toBe('provisioned');
    expect(stack.proxy.count(onNode(b!, isUndeploy))).toBe(0);
    // td-c never started: still provisioned with its image, not paused.
    const vc = await stack.h.hosts.get(hosts[2]!);
    expect(vc).toMatchObject({ spec: { image: { url: IMAGE.url } }, status: { provisioning: { state: 'provisioned' } } });
    expect(vc.paused).toBeUndefined();
  });

  it('delete: stopped with the host paused and still to be deleted; unpaused, the delete goes on', async () => {
    const ns = uniq('fleet');
    const [x] = await availableHosts(stack.base, stack.h, ns, ['tdl-a'], {});
    const nodeId = (await stack.h.hosts.get(x!)).status.provisioning.ID;
    stack.proxy.hold(onNode(nodeId, isPowerChange), HOLD_MS);
    const name = uniq('delete');
    await startFleet(stack.base, { name, operation: { kind: 'delete' }, selector: { namespace: ns } });
    await waitForHost(stack.h, x!, (v) => v.deleteRequested && v.currentOperation?.kind === 'power', 'powering off before delete');
    expect((await callApi(stack.base, 'POST', `/v1/fleet-operations/${name}/cancel`, { abortInFlight: true })).status).toBe(200);

    const done = await waitForFleet(stack.base, name, fleetEnded, 'ended');
    const why = `fleet operation ${name} aborted`;
    expect(done.counts).toMatchObject({ cancelled: 1, failed: 0, succeeded: 0 });
    expect(done.hosts[0]!.reason).toMatch(/^delete stopped: the host is paused \(fleet operation .* aborted\) and still to be deleted/);
    const v = await stack.h.hosts.get(x!);
    expect(v).toMatchObject({ deleteRequested: true, paused: { reason: why } });
    expect(v.currentOperation).toBeUndefined();
    expect((await hostRun(stack.h.client, x!)).kind).toBe('running');

    expect((await callApi(stack.base, 'DELETE', `/v1/namespaces/${ns}/hosts/${x!.name}/paused`)).status).toBe(200);
    await waitFor('host deleted once unpaused', async () => ((await hostRun(stack.h.client, x!)).kind === 'running' ? undefined : true), { timeoutMs: 240_000 });
    expect(await stack.h.ironic.getNode(nodeId)).toBeUndefined();
  });
});
