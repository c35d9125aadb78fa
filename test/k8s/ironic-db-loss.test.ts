/**
 * Kubernetes mode: Ironic restarted on an empty database (as a Metal3 Ironic
 * pod on its ephemeral SQLite) right after two BareMetalHosts finished an
 * operation: one just provisioned, a Redfish one just made available. Both
 * are at rest, their own checks half an hour away, so only the power
 * sentinel's fleet-wide list can tell them their node is gone: Ironic loses
 * them once a list has seen both (a node made and lost between two lists,
 * with no older node lost and no list failed, is one the sentinel never
 * saw). Each registers again on a new node, `status.provisioning.ID` updated
 * on the object, within 60 s of Ironic answering again (measured and
 * printed); the provisioned one is adopted with its image, never deployed
 * again; the available one, a Redfish host whose BMC reports its health,
 * keeps its `Healthy` condition through the re-registration instead of
 * falling back to Unknown.
 * On an Ironic and a sushy of this file's own: the shared stack's Ironic is
 * never restarted.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery } from '../../contracts/host';
import { powerSentinelWorkflowId } from '../../contracts/power-sentinel';
import type { SeenRecord } from '../../activities/power/sentinel-changes';
import { defaultPayloadConverter } from '@temporalio/common';
import { isDeploy } from '../../bench/support/ironic-proxy';
import { uniq, waitFor } from '../support/harness';
import { ownIronic, type OwnIronic } from '../support/own-ironic';
import { unusedPort } from '../support/ports';
import { startProxyProcess } from '../support/ironic-proxy-process';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-db-loss');
const TQ = uniq('tq-db-loss');
let ironic: OwnIronic;
/** The worker's Ironic traffic, recorded: a deploy after the loss would show here. */
let proxy: Awaited<ReturnType<typeof startProxyProcess>> | undefined;
beforeAll(async () => {
  // Ironic's power sync every 5 s: it reads the Redfish BMC's health into the node.
  ironic = ownIronic('k8s-ironic-db-loss', await unusedPort(), { withSushy: true, syncSeconds: 5 });
  await ironic.start();
  proxy = await startProxyProcess(ironic.url, join(mkdtempSync(join(tmpdir(), 'mf-db-loss-')), 'ironic-requests.jsonl'));
}, 180_000);
// The controller reads node health from the same Ironic every 2 s; the worker runs the power sentinel at its default interval.
const suite = useShimSuite(NS, TQ, () => ({ IRONIC_URL: ironic.url, METALFLOW_CONTROLLER_NODE_HEALTH_SECONDS: '2' }), () => ({ IRONIC_URL: proxy!.url }));
afterAll(async () => {
  await suite.client.workflow.getHandle(powerSentinelWorkflowId(TQ)).terminate('test done').catch(() => undefined);
  proxy?.stop();
  await ironic?.stop();
});

const apply = (doc: Record<string, unknown>) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc) });
const IMAGE = { url: 'http://127.0.0.1/images/db-loss.qcow2', checksum: 'd'.repeat(64), checksumType: 'sha256', format: 'qcow2' };

interface Condition { type: string; status: string; reason: string; lastTransitionTime: string }
interface Bmh {
  metadata: { name: string };
  status?: { provisioning?: { state?: string; ID?: string }; poweredOn?: boolean; errorCount?: number; conditions?: Condition[] };
}
const hosts = (): Map<string, Bmh> =>
  new Map((JSON.parse(kubectl(['get', 'bmh', '-n', NS, '-o', 'json']).stdout).items as Bmh[]).map((b) => [b.metadata.name, b]));
const healthy = (b: Bmh | undefined): Condition | undefined => b?.status?.conditions?.find((c) => c.type === 'Healthy');

async function ironicNode(id: string): Promise<{ provision_state: string; instance_info: Record<string, unknown>; extra: Record<string, unknown>; health?: string | null } | undefined> {
  const res = await fetch(`${ironic.url}/v1/nodes/${id}`, { headers: { 'X-OpenStack-Ironic-API-Version': '1.109' } });
  if (res.status === 404) return undefined;
  if (!res.ok) throw new Error(`Ironic: HTTP ${res.status}`);
  return (await res.json()) as never;
}

describe('Ironic restarted with an empty database, BareMetalHosts at rest', () => {
  it('registers again within 60 s a host just provisioned (adopted, no deploy) and a Redfish host just made available (Healthy kept)', { timeout: 400_000 }, async () => {
    const prov = 'just-provisioned';
    const rf = 'just-available';
    apply(secretDoc(`${rf}-bmc-secret`, { username: 'admin', password: 'password' }));
    apply(hostDoc(rf, {
      online: true,
      automatedCleaningMode: 'disabled',
      bmc: { address: `redfish+${ironic.sushyUrl}/redfish/v1/Systems/6d660000-0000-4000-8000-000000000001`, credentialsName: `${rf}-bmc-secret` },
    }, { 'inspect.metal3.io': 'disabled' }));
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${rf}`, '--timeout=180s']);
    // A deploy that ends just before the loss, while Ironic's power sync and the controller read the Redfish BMC's health.
    apply(secretDoc(`${prov}-bmc-secret`, { username: 'admin', password: 'pw' }));
    apply(hostDoc(prov, fakeHostSpec(prov, { image: IMAGE })));
    kubectl(['wait', '-n', NS, '--for=condition=Healthy', `bmh/${rf}`, '--timeout=120s']);
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=provisioned', `bmh/${prov}`, '--timeout=180s']);
    await waitFor('both hosts at rest', async () => {
      for (const name of [prov, rf]) if ((await suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery)).currentOperation) return undefined;
      return true;
    }, { timeoutMs: 60_000, intervalMs: 250 });

    const before = hosts();
    const oldId = new Map([prov, rf].map((n) => [n, before.get(n)!.status!.provisioning!.ID!]));
    // The sentinel tells a host whose node it listed and then no longer finds. These nodes may be younger than its
    // last list (the worker's first list comes at its start, the whole setup takes less than one interval, and
    // Ironic is back within the next one): the loss is made once a list has seen both.
    await waitFor('the sentinel listed both nodes', async () => {
      const payload = (await suite.client.workflow.getHandle(powerSentinelWorkflowId(TQ)).describe()).raw.pendingActivities?.[0]?.heartbeatDetails?.payloads?.[0];
      const seen = payload ? defaultPayloadConverter.fromPayload<{ seen?: SeenRecord }>(payload).seen : undefined;
      return [...oldId.values()].every((id) => seen?.nodes.some((n) => n[0] === id)) || undefined;
    }, { timeoutMs: 60_000, intervalMs: 1000 });
    const healthBefore = healthy(before.get(rf))!;
    expect(healthBefore).toMatchObject({ status: 'True', reason: 'Healthy' });
    const lastSeq = new Map<string, number>();
    for (const name of [prov, rf]) {
      const v = await suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery);
      lastSeq.set(name, Math.max(0, ...v.operations.map((o) => o.seq)));
    }

    await ironic.restartEmpty();
    const back = Date.now();
    for (const name of [prov, rf]) expect(await ironicNode(oldId.get(name)!), name).toBeUndefined();

    // Watched on the objects, as a user would: the new node's id in the status, the host back where it was.
    const steady: Record<string, string> = { [prov]: 'provisioned', [rf]: 'available' };
    const took = new Map<string, number>();
    const healthSeen = new Set<string>();
    await waitFor('both BareMetalHosts on a new node', async () => {
      const now = hosts();
      const h = healthy(now.get(rf));
      healthSeen.add(h ? `${h.status}/${h.reason}` : 'none');
      for (const name of [prov, rf]) {
        const p = now.get(name)?.status?.provisioning;
        if (!took.has(name) && p?.ID && p.ID !== oldId.get(name) && p.state === steady[name]) took.set(name, Date.now() - back);
      }
      return took.size === 2 || undefined;
    }, { timeoutMs: 120_000, intervalMs: 500 });
    // Noticed: the host's registration again began (its own check is half an hour away; the sentinel lists every 30 s).
    const noticed = new Map<string, number>();
    for (const name of [prov, rf]) {
      const v = await suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery);
      const enroll = v.operations.find((o) => o.seq > lastSeq.get(name)! && o.kind === 'enroll');
      noticed.set(name, Date.parse(enroll!.startedAt) - back);
    }
    console.log(
      `after Ironic answered again, empty: ${[prov, rf].map((n) => `${n} noticed its node gone in ${noticed.get(n)} ms, on its new node (status.provisioning.ID) in ${took.get(n)} ms`).join('; ')}`,
    );
    for (const name of [prov, rf]) expect(noticed.get(name), name).toBeLessThan(60_000);
    const after = hosts();
    for (const name of [prov, rf]) {
      const status = after.get(name)!.status!;
      const node = await ironicNode(status.provisioning!.ID!);
      expect(node?.extra.metalflow_host, name).toBe(`${NS}/${name}`);
      expect(status.errorCount, name).toBe(0);
      const v = await suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery);
      const kinds = v.operations.filter((o) => o.seq > lastSeq.get(name)!).map((o) => o.kind);
      expect(kinds, name).toContain('enroll');
      expect(kinds, name).not.toContain('provision');
      expect(kinds, name).not.toContain('inspect');
    }
    // Adopted with its image: active on the new node, with no deploy sent after the loss.
    const provNode = await ironicNode(after.get(prov)!.status!.provisioning!.ID!);
    expect(provNode).toMatchObject({ provision_state: 'active', instance_info: expect.objectContaining({ image_source: IMAGE.url }) });
    const sent = proxy!.requests().filter((r) => r.at >= back);
    expect(sent.filter(isDeploy)).toEqual([]);
    expect(sent.some((r) => r.path.endsWith('/states/provision') && /"target":\s*"adopt"/.test(r.body))).toBe(true);
    expect(after.get(rf)!.status!.poweredOn).toBe(true);

    // Healthy never fell back to Unknown: the last reading is kept, watched until Ironic has read the new node's health.
    const rfNode = after.get(rf)!.status!.provisioning!.ID!;
    await waitFor("the new node's health read by Ironic", async () => {
      const h = healthy(hosts().get(rf));
      healthSeen.add(h ? `${h.status}/${h.reason}` : 'none');
      return (await ironicNode(rfNode))?.health === 'OK' || undefined;
    }, { timeoutMs: 60_000, intervalMs: 500 });
    const h = healthy(hosts().get(rf));
    expect([...healthSeen]).toEqual(['True/Healthy']);
    expect(h?.lastTransitionTime).toBe(healthBefore.lastTransitionTime);
  });
});
