/**
 * Fleet operations over hosts of Kubernetes mode (issue 11): the fleet
 * changes each BareMetalHost itself (spec.image, Metal3's reboot
 * annotation), selected by the objects' own labels, so kubectl shows what it
 * asked and the controller, handing the object to the host workflow, keeps
 * it. Real kube-apiserver, controller and worker processes, the test stack's
 * Temporal and Ironic (fake-hardware).
 */
import { describe, expect, it } from 'vitest';
import type { FleetInput } from '../../model/fleet';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery } from '../../contracts/host';
import { fleetWorkflowId, type FleetProgress } from '../../contracts/fleet';
import type { fleetWorkflow } from '../../workflows/fleet/fleet';
import { uniq } from '../support/harness';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-fleetk');
const TQ = uniq('tq-fleetk');
const suite = useShimSuite(NS, TQ);
const IMAGE = { url: 'http://127.0.0.1/images/fleet-k8s.qcow2', checksum: 'e'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };
const RACK = { 'fk-1': 'r1', 'fk-2': 'r1', 'fk-3': 'r2' } as const;

interface Bmh {
  metadata: { annotations?: Record<string, string> };
  spec: { image?: { url: string } };
  status?: { provisioning?: { state: string } };
}
const get = (name: string): Bmh => JSON.parse(kubectl(['get', 'bmh', name, '-n', NS, '-o', 'json']).stdout) as Bmh;

async function runFleet(input: Omit<FleetInput, 'name'>): Promise<FleetProgress> {
  const name = uniq('fk');
  return suite.client.workflow.execute<typeof fleetWorkflow>('fleetWorkflow', { taskQueue: TQ, workflowId: fleetWorkflowId(name), args: [{ name, ...input }] });
}

describe('fleet operations in Kubernetes mode', () => {
  it('provision by setting spec.image and reboot by the reboot annotation on the BareMetalHosts their labels select', async () => {
    const docs = Object.entries(RACK).flatMap(([name, rack]) => {
      const host = hostDoc(name, fakeHostSpec(name)) as { metadata: Record<string, unknown> };
      return [secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'pw' }), { ...host, metadata: { ...host.metadata, labels: { rack } } }];
    });
    kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: docs }) });
    for (const name of Object.keys(RACK)) kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=300s']);
    const r1 = ['fk-1', 'fk-2'];

    const provisioned = await runFleet({ operation: { kind: 'provision', image: IMAGE }, selector: { namespace: NS, labelSelector: { matchLabels: { rack: 'r1' } } }, maxConcurrent: 2 });
    expect(provisioned.counts, JSON.stringify(provisioned.hosts)).toMatchObject({ succeeded: 2, failed: 0, skipped: 0 });
    expect(provisioned.selection?.hosts.map((h) => h.ref.name)).toEqual(r1);
    // The change is on the objects: what kubectl shows, and what the controller goes on handing the workflows.
    for (const name of r1) {
      expect(get(name).spec.image?.url, name).toBe(IMAGE.url);
      expect(get(name).status?.provisioning?.state, name).toBe('provisioned');
    }
    expect(get('fk-3').spec.image, 'fk-3 (rack r2)').toBeUndefined();
    expect(get('fk-3').status?.provisioning?.state).toBe('available');

    const started = new Date().toISOString();
    const rebooted = await runFleet({ operation: { kind: 'reboot', mode: 'hard' }, selector: { namespace: NS, labelSelector: { matchLabels: { rack: 'r1' } } }, maxConcurrent: 2 });
    expect(rebooted.counts, JSON.stringify(rebooted.hosts)).toMatchObject({ succeeded: 2, failed: 0, skipped: 0 });
    for (const name of r1) {
      const view = await suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery);
      expect(view.operations.filter((o) => o.kind === 'reboot' && o.startedAt >= started && o.outcome === 'succeeded'), name).toHaveLength(1);
      // Asked through Metal3's one-shot annotation, which the controller removes once the reboot is done.
      expect(get(name).metadata.annotations ?? {}, name).not.toHaveProperty(['reboot.metal3.io']);
    }
  }, 600_000);

  it('remediate creates one HostRemediation per selected BareMetalHost and reads its outcome (no Node here: refused, a failure)', async () => {
    const name = uniq('fk');
    const strategy = { type: 'Reboot' as const, retryLimit: 2, timeoutSeconds: 300 };
    const input: FleetInput = { name, operation: { kind: 'remediate', strategy, nodeHandling: 'Delete' }, selector: { namespace: NS, labelSelector: { matchLabels: { rack: 'r1' } } }, maxConcurrent: 2, maxFailures: 2 };
    const done = await suite.client.workflow.execute<typeof fleetWorkflow>('fleetWorkflow', { taskQueue: TQ, workflowId: fleetWorkflowId(name), args: [input] });
    expect(done.counts, JSON.stringify(done.hosts)).toMatchObject({ succeeded: 0, failed: 2, skipped: 0 });
    for (const h of done.hosts) expect(h, h.ref.name).toMatchObject({ outcome: 'failed', error: expect.stringMatching(/^remediation refused: .*nothing changed/) });
    // The objects the controller ran, what kubectl shows: one per host, with the fleet's strategy.
    const items = (JSON.parse(kubectl(['get', 'hostremediations', '-n', NS, '-l', `metalflow.io/fleet=${name}`, '-o', 'json']).stdout) as {
      items: { metadata: { name: string }; spec: { hostName: string; strategy: unknown; nodeHandling?: string }; status?: { outcome?: string } }[];
    }).items;
    expect(items.map((i) => i.spec.hostName).sort()).toEqual(['fk-1', 'fk-2']);
    for (const i of items) {
      expect(i.metadata.name).toMatch(new RegExp(`^fleet-${name}-[0-9a-f]{8}$`));
      expect(i.spec).toMatchObject({ strategy, nodeHandling: 'Delete' });
      expect(i.status?.outcome).toBe('refused');
    }
  }, 600_000);
});
