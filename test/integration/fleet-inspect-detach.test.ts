/**
 * Fleet operations reinspect, detach and attach on the real stack (Temporal,
 * Ironic, fake-hardware nodes), read back from the host workflows' own
 * records and from Ironic: a re-inspection that ran after the fleet started
 * the host, a node gone from Ironic after a detach and registered again
 * (adopted, not redeployed) after an attach.
 */
import { describe, expect, it } from 'vitest';
import { uniq } from '../support/harness';
import { callApi } from '../support/api-client';
import { availableHosts, fleetEnded, startFleet, useFleetStack, waitForFleet, waitForHost } from '../support/fleet-hosts';

const stack = useFleetStack();
const IMAGE = { url: 'http://127.0.0.1/fleet.qcow2', checksum: 'c'.repeat(32), checksumType: 'md5', format: 'qcow2' };

/** One host of the set provisioned (through the API) before the fleet starts. */
async function provisionOne(ns: string, name: string): Promise<void> {
  const res = await callApi(stack.base, 'PUT', `/v1/namespaces/${ns}/hosts/${name}/image`, IMAGE);
  expect(res.status, res.text).toBe(200);
  await waitForHost(stack.h, { namespace: ns, name }, (v) => v.status.provisioning.state === 'provisioned' && !v.currentOperation, 'provisioned');
}

describe('fleet reinspect, detach and attach', { timeout: 600_000 }, () => {
  it('reinspect: each available host inspected again after the fleet started it; a provisioned host skipped', async () => {
    const ns = uniq('fleet');
    const hosts = await availableHosts(stack.base, stack.h, ns, ['ri-a', 'ri-b', 'ri-c'], { role: 'worker' });
    await provisionOne(ns, 'ri-c');
    const inspectsBefore = await Promise.all(hosts.map(async (x) => (await stack.h.hosts.get(x)).operations.filter((o) => o.kind === 'inspect').length));
    const name = uniq('reinspect');
    const started = await startFleet(stack.base, { name, operation: { kind: 'reinspect' }, selector: { namespace: ns }, maxConcurrent: 2 });
    expect(started.input.operation).toEqual({ kind: 'reinspect' });
    const done = await waitForFleet(stack.base, name, fleetEnded, 'ended');
    expect(done.phase).toBe('completed');
    expect(done.counts).toMatchObject({ succeeded: 2, skipped: 1, failed: 0 });
    expect(done.hosts[2]).toMatchObject({ outcome: 'skipped', reason: 'the host is provisioned: it is inspected only when not provisioned (deprovision it first)' });
    for (const [i, x] of hosts.slice(0, 2).entries()) {
      const v = await stack.h.hosts.get(x);
      const inspects = v.operations.filter((o) => o.kind === 'inspect');
      expect(inspects.length).toBe(inspectsBefore[i]! + 1);
      expect(inspects.at(-1)).toMatchObject({ outcome: 'succeeded' });
      expect(inspects.at(-1)!.startedAt >= done.hosts[i]!.startedAt!).toBe(true);
      expect(v.status.hardware).toBeDefined();
      expect(v.status.operationHistory.inspect.end! >= done.hosts[i]!.startedAt!).toBe(true);
    }
    // Inspection's own next step (preparing) brings them back to available.
    for (const x of hosts.slice(0, 2)) await waitForHost(stack.h, x, (v) => v.status.provisioning.state === 'available' && !v.currentOperation, 'available again');
    // The provisioned host was not asked: no inspection waits for its next deprovision.
    const skipped = await stack.h.hosts.get(hosts[2]!);
    expect(skipped.operations.filter((o) => o.kind === 'inspect').length).toBe(inspectsBefore[2]);
  });

  it("POST …/inspect inspects one available host again, and refuses a provisioned one with the fleet's reason", async () => {
    const ns = uniq('fleet');
    const [one, two] = await availableHosts(stack.base, stack.h, ns, ['si-a', 'si-b'], { role: 'single' });
    await provisionOne(ns, 'si-b');
    const before = new Date().toISOString();
    const asked = await callApi(stack.base, 'POST', `/v1/namespaces/${ns}/hosts/si-a/inspect`);
    expect(asked.status, asked.text).toBe(202);
    const v = await waitForHost(stack.h, one!, (x) => x.operations.some((o) => o.kind === 'inspect' && o.outcome === 'succeeded' && o.startedAt >= before) && x.status.provisioning.state === 'available' && !x.currentOperation, 'inspected again');
    expect(v.status.operationHistory.inspect.end! >= before).toBe(true);
    const inspectsOfTwo = (await stack.h.hosts.get(two!)).operations.filter((o) => o.kind === 'inspect').length;
    const refused = await callApi(stack.base, 'POST', `/v1/namespaces/${ns}/hosts/si-b/inspect`);
    expect(refused.status).toBe(409);
    expect(refused.json.message).toBe('the host is provisioned: it is inspected only when not provisioned (deprovision it first)');
    expect((await stack.h.hosts.get(two!)).operations.filter((o) => o.kind === 'inspect').length).toBe(inspectsOfTwo);
    expect((await callApi(stack.base, 'POST', `/v1/namespaces/${ns}/hosts/nope/inspect`)).status).toBe(404);
  });

  it('detach takes the nodes out of Ironic; attach registers them again, the provisioned one adopted as it is', async () => {
    const ns = uniq('fleet');
    const hosts = await availableHosts(stack.base, stack.h, ns, ['dt-a', 'dt-b'], { rack: 'r9' });
    const [other] = await availableHosts(stack.base, stack.h, ns, ['dt-x'], { rack: 'r1' });
    await provisionOne(ns, 'dt-b');
    const nodes = await Promise.all(hosts.map(async (x) => (await stack.h.hosts.get(x)).status.provisioning.ID));
    const selector = { namespace: ns, labelSelector: { matchLabels: { rack: 'r9' } } };

    const detach = uniq('detach');
    await startFleet(stack.base, { name: detach, operation: { kind: 'detach' }, selector, maxConcurrent: 2 });
    const detached = await waitForFleet(stack.base, detach, fleetEnded, 'ended');
    expect(detached.counts).toMatchObject({ succeeded: 2, failed: 0, skipped: 0 });
    for (const [i, x] of hosts.entries()) {
      const v = await stack.h.hosts.get(x);
      expect(v.status.operationalStatus).toBe('detached');
      expect(v.operations.filter((o) => o.kind === 'detach').map((o) => o.outcome)).toEqual(['succeeded']);
      expect(await stack.h.ironic.getNode(nodes[i]!)).toBeUndefined();
    }
    expect((await stack.h.hosts.get(hosts[1]!)).status.provisioning.state).toBe('provisioned');
    expect((await stack.h.hosts.get(other!)).status.operationalStatus).toBe('OK');

    // A reboot fleet leaves detached hosts alone.
    const reboot = uniq('reboot');
    await startFleet(stack.base, { name: reboot, operation: { kind: 'reboot' }, selector });
    const rebooted = await waitForFleet(stack.base, reboot, fleetEnded, 'ended');
    expect(rebooted.hosts.map((x) => x.reason)).toEqual(['the host is detached', 'the host is detached']);

    const attach = uniq('attach');
    await startFleet(stack.base, { name: attach, operation: { kind: 'attach' }, selector, maxConcurrent: 2 });
    const attached = await waitForFleet(stack.base, attach, fleetEnded, 'ended');
    expect(attached.counts).toMatchObject({ succeeded: 2, failed: 0, skipped: 0 });
    for (const x of hosts) {
      const v = await stack.h.hosts.get(x);
      expect(v.status.operationalStatus).toBe('OK');
      expect(await stack.h.ironic.getNode(v.status.provisioning.ID)).toBeDefined();
      const since = attached.hosts.find((y) => y.ref.name === x.name)!.startedAt!;
      expect(v.operations.filter((o) => o.kind === 'enroll' && o.startedAt >= since).map((o) => o.outcome)).toEqual(['succeeded']);
    }
    // Adopted, not redeployed: one deploy in its records, still provisioned with its image.
    const b = await stack.h.hosts.get(hosts[1]!);
    expect(b.operations.filter((o) => o.kind === 'provision').length).toBe(1);
    expect(b.status.provisioning).toMatchObject({ state: 'provisioned', image: { url: IMAGE.url } });
  });

  it('refuses a detach with an unknown deleteAction, naming the field', async () => {
    const res = await callApi(stack.base, 'POST', '/v1/fleet-operations', { name: uniq('bad'), operation: { kind: 'detach', deleteAction: 'later' }, selector: { namespace: 'x' } });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.json)).toContain('operation.deleteAction');
  });
});
