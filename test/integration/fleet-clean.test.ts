/**
 * Fleet operation `clean` (patch fleet-clean) on the real stack (Temporal,
 * Ironic, fake-hardware nodes): a manual clean with the given steps asked of
 * each selected available host through its own workflow, read back from the
 * host workflows' records and from Ironic (the BIOS settings its fake bios
 * interface applied). A provisioned host is skipped and never asked.
 */
import { describe, expect, it } from 'vitest';
import { IRONIC_URL } from '../support/env';
import { uniq } from '../support/harness';
import { callApi } from '../support/api-client';
import { availableHosts, fleetEnded, startFleet, useFleetStack, waitForFleet, waitForHost } from '../support/fleet-hosts';

const stack = useFleetStack();
const IMAGE = { url: 'http://127.0.0.1/fleet.qcow2', checksum: 'c'.repeat(32), checksumType: 'md5', format: 'qcow2' };

async function biosOf(nodeId: string): Promise<Record<string, string | null>> {
  const res = await fetch(`${IRONIC_URL}/v1/nodes/${nodeId}/bios`, { headers: { 'x-openstack-ironic-api-version': '1.81' } });
  const body = (await res.json()) as { bios: { name: string; value: string | null }[] };
  return Object.fromEntries(body.bios.map((b) => [b.name, b.value]));
}

describe('fleet clean', { timeout: 600_000 }, () => {
  it('runs the steps on each available host, one clean each since the fleet started it; a provisioned host is skipped; bad steps are a 400', async () => {
    const ns = uniq('fleet');
    const hosts = await availableHosts(stack.base, stack.h, ns, ['cl-a', 'cl-b', 'cl-c'], { rack: 'r3' });
    const res = await callApi(stack.base, 'PUT', `/v1/namespaces/${ns}/hosts/cl-c/image`, IMAGE);
    expect(res.status, res.text).toBe(200);
    await waitForHost(stack.h, hosts[2]!, (v) => v.status.provisioning.state === 'provisioned' && !v.currentOperation, 'provisioned');

    const bad = await callApi(stack.base, 'POST', '/v1/fleet-operations', { name: uniq('clean'), operation: { kind: 'clean', steps: [{ name: 'polish' }] }, selector: { namespace: ns } });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('operation.steps[0].name');

    const name = uniq('clean');
    const steps = [{ name: 'bios', firmware: { virtualizationEnabled: true }, settings: { BootMode: 'Uefi' } }];
    await startFleet(stack.base, { name, operation: { kind: 'clean', steps }, selector: { namespace: ns }, maxConcurrent: 2 });
    const done = await waitForFleet(stack.base, name, fleetEnded, 'ended');
    expect(done.phase).toBe('completed');
    expect(done.counts).toMatchObject({ succeeded: 2, skipped: 1, failed: 0 });
    expect(done.hosts.find((x) => x.ref.name === 'cl-c')).toMatchObject({ outcome: 'skipped', reason: 'the host is provisioned: a clean runs only on an available host' });
    for (const x of hosts.slice(0, 2)) {
      const v = await stack.h.hosts.get(x);
      const cleans = v.operations.filter((o) => o.kind === 'clean');
      expect(cleans).toHaveLength(1);
      expect(cleans[0]).toMatchObject({ outcome: 'succeeded', steps: ['bios'] });
      expect(v.status.provisioning.state).toBe('available');
      expect(await biosOf(v.status.provisioning.ID)).toMatchObject({ ProcVirtualization: 'Enabled', BootMode: 'Uefi' });
    }
    expect((await stack.h.hosts.get(hosts[2]!)).operations.filter((o) => o.kind === 'clean')).toHaveLength(0);
  });
});
