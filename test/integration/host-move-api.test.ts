/**
 * Moving a host through the HTTP API alone, the two primitives an API-mode
 * pivot's hand-over needs, on the real stack (Ironic behind a recording
 * proxy): `PUT …/detached` takes a provisioned host out of Ironic as it is
 * (node deleted, no deprovision, no power change), and a `PUT` that creates
 * the host with the `status` it had restores it: registered and adopted, never
 * inspected or deployed. A `status` for a host that exists is a 409; one that
 * is not a status is a 400 naming the field.
 */
import { describe, expect, it } from 'vitest';
import { callApi } from '../support/api-client';
import { randomMac, uniq, waitFor } from '../support/harness';
import { isDeploy, isPowerChange } from '../../bench/support/ironic-proxy';
import { useFleetStack, waitForHost } from '../support/fleet-hosts';
import { provisionVerb } from '../k8s/pivot-figures';
import type { HostView } from '../../contracts/host';

const stack = useFleetStack({ proxied: true });
const IMAGE = { url: 'http://127.0.0.1/images/move.qcow2', checksum: 'b'.repeat(64), checksumType: 'sha256', format: 'qcow2' };

describe('a host moved through the API: detach, delete, create with its status', { timeout: 600_000 }, () => {
  it('leaves Ironic as it is and is adopted again, with no deploy, inspection, deprovision or power off', async () => {
    const from = { namespace: uniq('mv-a'), name: 'mv-1' };
    const to = { namespace: uniq('mv-b'), name: 'mv-1' };
    const spec = { bmc: { address: `fake://${from.name}`, credentialsName: `${from.name}-bmc` }, bootMACAddress: randomMac(), online: true, image: IMAGE };
    const body = { metadata: { labels: { rack: 'r1' } }, spec, credentials: { username: 'admin', password: 'pw-move' } };
    const created = await callApi(stack.base, 'PUT', `/v1/namespaces/${from.namespace}/hosts/${from.name}`, body);
    expect(created.status, created.text).toBe(201);
    const before = await waitForHost(stack.h, from, (v) => v.status.provisioning.state === 'provisioned' && v.status.poweredOn && !v.currentOperation, 'provisioned');
    const sent = stack.proxy.requests.length;

    // A status for a host that exists is refused, and changes nothing.
    const again = await callApi(stack.base, 'PUT', `/v1/namespaces/${from.namespace}/hosts/${from.name}`, { ...body, status: before.status });
    expect(again.status, again.text).toBe(409);
    expect(again.text).toContain('status: taken only when the host is created');

    // Out of Ironic as it is.
    const detach = await callApi(stack.base, 'PUT', `/v1/namespaces/${from.namespace}/hosts/${from.name}/detached`, { deleteAction: 'delete' });
    expect(detach.status, detach.text).toBe(200);
    await waitForHost(stack.h, from, (v) => v.status.operationalStatus === 'detached' && !v.currentOperation, 'detached');
    expect((await callApi(stack.base, 'DELETE', `/v1/namespaces/${from.namespace}/hosts/${from.name}`)).status).toBe(202);
    await waitFor('the source host gone', async () => (await callApi(stack.base, 'GET', `/v1/namespaces/${from.namespace}/hosts/${from.name}`)).status === 404, { timeoutMs: 120_000, intervalMs: 500 });

    // Elsewhere, created with the status it had.
    const bad = await callApi(stack.base, 'PUT', `/v1/namespaces/${to.namespace}/hosts/${to.name}`, { ...body, status: { provisioning: { state: 'flying' } } });
    expect(bad.status, bad.text).toBe(400);
    expect(bad.text).toContain('status');
    const restored = await callApi(stack.base, 'PUT', `/v1/namespaces/${to.namespace}/hosts/${to.name}`, { ...body, status: before.status });
    expect(restored.status, restored.text).toBe(201);
    const after: HostView = await waitForHost(stack.h, to, (v) => v.status.provisioning.state === 'provisioned' && v.status.provisioning.ID !== '' && v.status.provisioning.ID !== before.status.provisioning.ID && v.status.poweredOn && !v.currentOperation, 'adopted');
    expect(after.status.provisioning.image?.url).toBe(IMAGE.url);
    expect(after.labels).toEqual({ rack: 'r1' });
    const kinds = after.operations.map((o) => o.kind);
    expect(kinds).not.toContain('provision');
    expect(kinds).not.toContain('inspect');

    const requests = stack.proxy.requests.slice(sent);
    const figures = {
      deploys: requests.filter(isDeploy).length,
      verbs: [...new Set(requests.map(provisionVerb).filter(Boolean))].sort(),
      powerOffsOrReboots: requests.filter((r) => isPowerChange(r) && !/"power on"/.test(r.body)).length,
      nodeDeletes: requests.filter((r) => r.method === 'DELETE' && /^\/v1\/nodes\/[^/]+$/.test(r.path)).length,
    };
    process.stderr.write(`[host-move-api test] proxy figures: ${JSON.stringify(figures)}\n`);
    expect(figures).toEqual({ deploys: 0, verbs: ['adopt', 'manage'], powerOffsOrReboots: 0, nodeDeletes: 1 });
  });
});
