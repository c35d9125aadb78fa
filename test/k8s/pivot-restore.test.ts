/**
 * The status annotation a pivot's export writes restores in a fresh target
 * exactly as the manifest-driven restore does (`clusterctl move`: CAPM3's
 * pause makes the controller write `baremetalhost.metal3.io/status`, the
 * manifest is copied as it is). Two provisioned hosts in plane A, alike but
 * for their names: one moved to B by a pivot, the other by its manifest
 * (detached in A first, so two Ironics never manage one BMC). In B both end
 * with the same status and the same operations, and Ironic B received the
 * same requests for both (counted at the proxy): no deploy, no clean, no
 * power off or reboot.
 */
import { describe, expect, it } from 'vitest';
import { Client } from '@temporalio/client';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery } from '../../contracts/host';
import { pivotWorkflowId, type PivotProgress } from '../../contracts/pivot';
import type { pivotWorkflow } from '../../workflows/pivot/pivot';
import type { RecordedRequest } from '../../bench/support/ironic-proxy';
import { uniq } from '../support/harness';
import { waitFor } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { usePivotPlanes } from './pivot-planes';

const NS = uniq('mf-restore');
const planes = usePivotPlanes(NS, 'never-refused', 1);
const { NS_B, TQ_A, TQ_B, inA, inB } = planes;
const image = { url: 'http://127.0.0.1/images/restore.qcow2', checksum: 'e'.repeat(64), checksumType: 'sha256', format: 'qcow2' };
const EXPORTED = 'rs-export';
const MANIFEST = 'rs-manifest';
const STATUS = 'baremetalhost.metal3.io/status';

interface Bmh {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
  status?: { operationalStatus?: string; poweredOn?: boolean; provisioning?: { state: string; ID: string; image?: { url?: string } } };
}
const getIn = (plane: (args: string[]) => { stdout: string }, name: string): Bmh => JSON.parse(plane(['get', 'bmh', '-n', NS, name, '-o', 'json']).stdout) as Bmh;
const inAget = (name: string): Bmh => getIn((args) => inA(args), name);
const inBget = (name: string): Bmh => getIn((args) => inB(args), name);

/** What a host's status says once its names, ids, MACs and times are masked: equal for two hosts restored alike. */
function masked(name: string, status: unknown): unknown {
  const text = JSON.stringify(status)
    .replaceAll(name, '<host>')
    .replace(/"(ID|lastUpdated|credentialsVersion)":"[^"]*"/g, '"$1":"<x>"')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>')
    .replace(/([0-9a-f]{2}:){5}[0-9a-f]{2}/gi, '<mac>');
  return JSON.parse(text) as unknown;
}

/** The changes sent to an Ironic for one host's node (by name or id), ids masked: method, path and provision/power target. */
function changesFor(requests: RecordedRequest[], nodeName: string, nodeIds: string[]): string[] {
  const mine = (r: RecordedRequest) => [nodeName, encodeURIComponent(nodeName), ...nodeIds].some((k) => r.path.includes(k)) || (r.path === '/v1/nodes' && r.body.includes(nodeName));
  return requests
    .filter((r) => r.method !== 'GET' && mine(r))
    .map((r) => {
      let path = r.path;
      for (const k of [encodeURIComponent(nodeName), nodeName, ...nodeIds]) path = path.replaceAll(k, '<node>');
      const target = /\/states\/(provision|power)$/.test(r.path) ? ` ${(JSON.parse(r.body) as { target: string }).target}` : '';
      return `${r.method} ${path}${target}`;
    });
}

describe('restore from the export vs. from the manifest', () => {
  it('a host moved by a pivot and one moved by its manifest end alike in B: same status, operations and Ironic requests, none a deploy, clean or power change but the fake power-on', async () => {
    const docs: Record<string, unknown>[] = [];
    for (const name of [EXPORTED, MANIFEST]) {
      docs.push({ ...secretDoc(`${name}-bmc-secret`, { username: 'admin', password: `pw-${name}` }), metadata: { name: `${name}-bmc-secret`, namespace: NS } });
      const doc = hostDoc(name, fakeHostSpec(name, { image })) as { metadata: Record<string, unknown> };
      docs.push({ ...doc, metadata: { ...doc.metadata, namespace: NS, labels: { rack: 'r9' } } });
    }
    inA(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: docs }));
    for (const name of [EXPORTED, MANIFEST]) inA(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=provisioned', `bmh/${name}`, '--timeout=300s']);
    const sourceIds = Object.fromEntries([EXPORTED, MANIFEST].map((n) => [n, inAget(n).status!.provisioning!.ID]));
    const sentToA = planes.proxyA.requests().length;
    const sentToB = planes.proxyB.requests().length;

    // The manifest's way, as clusterctl move does it: paused by CAPM3, the controller writes the status annotation.
    inA(['annotate', 'bmh', '-n', NS, MANIFEST, 'baremetalhost.metal3.io/paused=metal3.io/capm3']);
    let manifest: Bmh | undefined;
    await waitFor('the status annotation', () => {
      manifest = inAget(MANIFEST);
      const value = manifest.metadata.annotations?.[STATUS];
      return value !== undefined && JSON.stringify(JSON.parse(value)) === JSON.stringify(manifest.status);
    }, 60_000);
    // Detached in A (the node deleted as it is) before B may register it, then the source object deleted.
    inA(['annotate', 'bmh', '-n', NS, MANIFEST, 'baremetalhost.metal3.io/paused-', 'baremetalhost.metal3.io/detached={"deleteAction":"delete"}']);
    await waitFor('detached in A', () => inAget(MANIFEST).status?.operationalStatus === 'detached', 120_000);
    inA(['delete', 'bmh', '-n', NS, MANIFEST, '--timeout=120s']);
    const { 'baremetalhost.metal3.io/paused': _paused, ...copied } = manifest!.metadata.annotations!;
    const secret = JSON.parse(inA(['get', 'secret', '-n', NS, `${MANIFEST}-bmc-secret`, '-o', 'json']).stdout) as { data: Record<string, string> };
    inB(['create', 'namespace', NS], { check: false });
    inB(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          { apiVersion: 'v1', kind: 'Secret', metadata: { name: `${MANIFEST}-bmc-secret`, namespace: NS }, type: 'Opaque', data: secret.data },
          { apiVersion: manifest!.apiVersion, kind: manifest!.kind, metadata: { name: MANIFEST, namespace: NS, labels: manifest!.metadata.labels, annotations: copied }, spec: manifest!.spec },
        ],
      }),
    });

    // The export's way: a pivot of the other host.
    const pivot = uniq('restore');
    const result: PivotProgress = await planes.env.client.workflow.execute<typeof pivotWorkflow>('pivotWorkflow', {
      workflowId: pivotWorkflowId(pivot),
      taskQueue: TQ_A,
      args: [{ name: pivot, source: {}, target: { plane: planes.PLANE_B }, selector: { namespace: NS, hosts: [{ namespace: NS, name: EXPORTED }] }, hostTimeoutSeconds: 600 }],
    });
    expect(result.counts, JSON.stringify(result.hosts)).toMatchObject({ succeeded: 1 });

    // Both restored and at rest in B, the annotation consumed, their workflows on their own nodes.
    const clientB = new Client({ connection: planes.env.client.connection, namespace: NS_B });
    const view = (name: string) => clientB.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery);
    for (const name of [EXPORTED, MANIFEST]) {
      await waitFor(`${name} restored in B`, async () => {
        const b = inBget(name);
        if (b.metadata.annotations?.[STATUS] !== undefined || b.status?.provisioning?.state !== 'provisioned' || b.status.poweredOn !== true) return false;
        const v = await view(name).catch(() => undefined);
        return v !== undefined && !v.currentOperation && v.status.provisioning.ID !== '' && v.status.provisioning.ID !== sourceIds[name];
      }, 300_000);
    }
    const restored = Object.fromEntries([EXPORTED, MANIFEST].map((n) => [n, inBget(n)]));
    expect(masked(EXPORTED, restored[EXPORTED]!.status)).toEqual(masked(MANIFEST, restored[MANIFEST]!.status));
    expect(restored[EXPORTED]!.status?.provisioning?.image?.url).toBe(image.url);
    expect(restored[EXPORTED]!.metadata.labels).toEqual(restored[MANIFEST]!.metadata.labels);
    const opsOf = async (name: string) => (await view(name)).operations.map((o) => `${o.kind}:${o.outcome}`);
    expect(await opsOf(EXPORTED)).toEqual(await opsOf(MANIFEST));

    // The same requests reached Ironic B for both, and Ironic A for both (the detach).
    const b = planes.proxyB.requests().slice(sentToB);
    const a = planes.proxyA.requests().slice(sentToA);
    const node = (name: string) => `${NS}~${name}`;
    const toB = Object.fromEntries([EXPORTED, MANIFEST].map((n) => [n, changesFor(b, node(n), [restored[n]!.status!.provisioning!.ID])]));
    const toA = Object.fromEntries([EXPORTED, MANIFEST].map((n) => [n, changesFor(a, node(n), [sourceIds[n]!])]));
    process.stderr.write(`[pivot-restore test] Ironic B, per host: ${JSON.stringify(toB)}\n[pivot-restore test] Ironic A, per host: ${JSON.stringify(toA)}\n`);
    // The same kinds of change (a PATCH a busy Ironic answered 409 to and the worker sent again is still one kind).
    const kinds = (changes: string[]) => [...new Set(changes)].sort();
    expect(kinds(toB[EXPORTED]!)).toEqual(kinds(toB[MANIFEST]!));
    expect(kinds(toA[EXPORTED]!)).toEqual(kinds(toA[MANIFEST]!));
    const verbs = [...new Set(toB[EXPORTED]!.filter((c) => c.includes('/states/provision ')).map((c) => c.split(' ').pop()))].sort();
    expect(verbs).toEqual(['adopt', 'manage']);
    // Fake hardware has no power state in a fresh Ironic: B asks "power on" at most once; never off or reboot.
    const power = toB[EXPORTED]!.filter((c) => c.includes('/states/power '));
    expect(power.filter((c) => !c.endsWith(' power on'))).toEqual([]);
    expect(power.length).toBeLessThanOrEqual(1);
    expect(toA[EXPORTED]!.some((c) => c.includes('/states/'))).toBe(false);
    expect(toA[EXPORTED]).toContain('DELETE /v1/nodes/<node>');
  }, 900_000);
});
