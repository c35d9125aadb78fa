/**
 * What a host asks of Ironic to register again after Ironic lost its node (as
 * after a restart on an empty database), counted at the recording proxy from
 * the loss until the host is back at rest: an available host and a
 * provisioned one, both on, their nodes deleted behind their backs and the
 * loss seen by the power sentinel's list. Printed request by request. A new
 * fake-hardware node reports no power state: the hosts, recorded on, are not
 * powered on again for it (as BMO: an unknown power leaves the recorded one),
 * the provisioned one is adopted (no deploy), and each host's requests stay
 * within a bound (the node, its port, manage, adopt, and the reads that wait
 * for them).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import { IronicClient } from '../../clients/ironic/client';
import type { HostRef } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import { powerSentinelWorkflowId, type PowerSentinelWorkflow } from '../../contracts/power-sentinel';
import { requestKind } from '../../bench/measure';
import { isDeploy, type RecordedRequest } from '../../bench/support/ironic-proxy';
import { FAST_HOST_OPTIONS, randomMac, uniq, waitFor } from '../support/harness';
import { IRONIC_URL } from '../support/env';
import { useProxiedHarness } from '../support/proxied-harness';

const ctx = useProxiedHarness({ hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 3600, watchedPowerCheckSeconds: 3600 } });
const ironic = new IronicClient({ url: IRONIC_URL });
let sentinel: WorkflowHandle<PowerSentinelWorkflow> | undefined;
afterAll(async () => {
  await sentinel?.cancel().catch(() => undefined);
});

const view = (ref: HostRef): Promise<HostView> => ctx.h.client.workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery);
const IMAGE = { url: 'http://127.0.0.1/images/rereg.qcow2', checksum: 'f'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };
/**
 * What a host writes to Ironic to register again: the node (one POST), its port, manage, and for a provisioned host
 * its image (one PATCH) and adopt. Before: a power-on too.
 */
const WRITES = { available: ['POST /v1/nodes', 'POST /v1/ports', 'PUT /v1/nodes/{node}/states/provision'], provisioned: ['POST /v1/nodes', 'POST /v1/ports', 'PUT /v1/nodes/{node}/states/provision', 'PATCH /v1/nodes/{node}', 'PUT /v1/nodes/{node}/states/provision'] };
/** Its reads: the power check that found the node gone, the boot MAC's port, and the watcher's while Ironic works (a few, more on a busy machine). */
const MAX_READS_PER_HOST = 10;

describe('registering again hosts whose nodes Ironic lost', () => {
  it('asks Ironic only for the node, its port, manage (adopt), and the reads that wait for them: no power change for hosts recorded on', { timeout: 120_000 }, async () => {
    const ns = uniq('rereg');
    const hosts = [
      { ref: { namespace: ns, name: 'available' }, mac: randomMac(), state: 'available', node: 'manageable' },
      { ref: { namespace: ns, name: 'provisioned' }, mac: randomMac(), state: 'provisioned', node: 'active', image: IMAGE },
    ];
    const atRest = (ref: HostRef, state: string, oldId?: string) =>
      waitFor(`${ref.name} ${state} and on`, async () => {
        const v = await view(ref);
        const id = v.status.provisioning.ID;
        return id && id !== oldId && v.status.provisioning.state === state && v.status.poweredOn && !v.currentOperation ? v : undefined;
      }, { timeoutMs: 60_000, intervalMs: 250 });
    const before = await Promise.all(hosts.map(async ({ ref, mac, state, image }) => {
      await ctx.h.hosts.put(ref, {
        spec: { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: mac, online: true, inspectionMode: 'disabled', automatedCleaningMode: 'disabled', ...(image ? { image } : {}) },
        credentials: { username: 'admin', password: 'pw' },
      });
      return (await atRest(ref, state)).status.provisioning.ID;
    }));

    sentinel = await ctx.h.client.workflow.start<PowerSentinelWorkflow>('powerSentinelWorkflow', {
      workflowId: powerSentinelWorkflowId(uniq(`${ctx.h.taskQueue}-${ns}`)),
      taskQueue: ctx.h.taskQueue,
      args: [{ intervalSeconds: 1, watchSeconds: 120, namespace: ns }],
    });
    const from = ctx.proxy.requests.length;
    for (const id of before) {
      await ironic.setMaintenance(id, 'test: Ironic lost the node');
      await ironic.deleteNode(id);
    }
    const after = await Promise.all(hosts.map(({ ref, state }, i) => atRest(ref, state, before[i])));
    await sentinel.cancel();
    const sent = ctx.proxy.requests.slice(from);

    const requestsOf = hosts.map(({ ref, mac }, i) => {
      const ids = [before[i]!, after[i]!.status.provisioning.ID];
      const mine = (r: RecordedRequest): boolean =>
        [...ids, mac, `${ns}~${ref.name}`].some((s) => decodeURIComponent(r.path).includes(s)) || r.body.includes(ids[1]!) || r.body.includes(`"${ns}/${ref.name}"`);
      const its = sent.filter(mine);
      console.log(`${ref.name}: its Ironic requests from the loss until registered again and at rest (${its.length}):\n${its.map((r) => `  ${requestKind(r)} -> ${r.status ?? r.injected ?? '?'}${r.method === 'PUT' ? ` ${r.body}` : ''}`).join('\n')}`);
      return its;
    });
    for (const [i, { ref, node }] of hosts.entries()) {
      const newId = after[i]!.status.provisioning.ID;
      const its = requestsOf[i]!;
      expect(after[i]!.status.errorCount, ref.name).toBe(0);
      expect(await ironic.getNode(newId), ref.name).toMatchObject({ provision_state: node, extra: { metalflow_host: `${ns}/${ref.name}` } });
      // The new node reports no power state: the host, recorded on, is not powered on again.
      expect(its.filter((r) => r.method === 'PUT' && r.path.endsWith('/states/power')), ref.name).toEqual([]);
      expect(its.filter(isDeploy), ref.name).toEqual([]);
      expect(its.filter((r) => r.method !== 'GET').map(requestKind), ref.name).toEqual(WRITES[ref.name as keyof typeof WRITES]);
      // The node Ironic answered "not found" for is read once (the power check), not looked up by its id again.
      expect(its.filter((r) => r.method === 'GET' && r.path.includes(before[i]!)).length, ref.name).toBe(1);
      expect(its.filter((r) => r.method === 'GET').length, ref.name).toBeLessThanOrEqual(MAX_READS_PER_HOST);
    }
  });
});
