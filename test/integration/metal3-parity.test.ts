/**
 * Metal3 parity through the HTTP API's host service (issue 16), on the real
 * Temporal and Ironic, with the worker's Ironic traffic recorded by the proxy:
 * what Ironic received (the config drive, node properties, instance_info).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import type { HostSpec } from '../../types/host';
import { hostWorkflowId } from '../../types/host-ref';
import { IRONIC_URL } from '../support/env';
import { isDeploy, type IronicProxy } from '../support/ironic-proxy';
import { randomMac, uniq, waitFor, type Harness } from '../support/harness';
import { useProxiedHarness } from '../support/proxied-harness';

const NS = 'parity';
const suite = useProxiedHarness();
let h: Harness;
let proxy: IronicProxy;
/** The test's own view of Ironic, beside the proxy. */
const ironic = new IronicClient({ url: IRONIC_URL });

beforeAll(() => {
  ({ h, proxy } = suite);
});

const IMAGE = { url: 'http://127.0.0.1/images/parity.qcow2', checksum: 'c'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };
const settle = <T>(what: string, probe: () => Promise<T | undefined | false>) => waitFor(what, probe, { timeoutMs: 180_000 });
const fakeSpec = (name: string, over: Partial<HostSpec> = {}): HostSpec => ({
  bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` },
  bootMACAddress: randomMac(),
  online: true,
  ...over,
});

async function hostIn(state: string, over: Partial<HostSpec> = {}) {
  const ref = { namespace: NS, name: uniq('par') };
  const spec = fakeSpec(ref.name, over);
  await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
  const view = await settle(state, async () => {
    const v = await h.hosts.get(ref);
    return v.status.provisioning.state === state && !v.currentOperation ? v : undefined;
  });
  return { ref, spec, view, nodeId: view.status.provisioning.ID };
}

/** The config drive the worker sent with the node's (only) deploy. */
function deployedMetaData(nodeId: string): Record<string, unknown> {
  const deploys = proxy.requests.filter((r) => isDeploy(r) && r.path === `/v1/nodes/${nodeId}/states/provision`);
  expect(deploys).toHaveLength(1);
  return (JSON.parse(deploys[0]!.body) as { configdrive: { meta_data: Record<string, unknown> } }).configdrive.meta_data;
}

describe('the config drive meta_data.uuid of an API host', { timeout: 600_000 }, () => {
  it('is the uid the host got when it was created, shown in its view, and kept when it is re-adopted', async () => {
    const { ref, spec, view, nodeId } = await hostIn('provisioned', { image: IMAGE });
    expect(view.uid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const meta = deployedMetaData(nodeId);
    expect(meta.uuid).toBe(view.uid);
    expect(meta.uuid).not.toBe(nodeId);

    // A workflow that ended abnormally is re-adopted with the same uid.
    await h.client.workflow.getHandle(hostWorkflowId(ref)).terminate('test: the host workflow ends abnormally');
    await h.hosts.put(ref, { spec });
    const again = await settle('re-adopted', async () => {
      const v = await h.hosts.get(ref);
      return v.operations.some((o) => o.kind === 'enroll' && o.outcome === 'succeeded') && !v.currentOperation ? v : undefined;
    });
    expect(again.uid).toBe(view.uid);
    await h.hosts.remove(ref);
  });
});
