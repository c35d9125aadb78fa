/**
 * HostFirmwareComponents on a real kube-apiserver, the worker and controller
 * as their own processes, the test stack's Temporal and Ironic: invalid
 * updates refused (Valid false, Warning Events, no clean), valid ones run as
 * the host's `firmware` clean step through Ironic's `firmware.update` (the
 * fake-hardware firmware interface's step really runs), then status.updates.
 */
import { describe, expect, it } from 'vitest';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery } from '../../contracts/host';
import { uniq, waitFor } from '../support/harness';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-hfc');
const taskQueue = uniq('tq-hfc');
const suite = useShimSuite(NS, taskQueue, { METALFLOW_FIRMWARE_RESYNC_SECONDS: '2' });

const apply = (doc: Record<string, unknown>) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify({ apiVersion: 'metal3.io/v1alpha1', ...doc }) });
interface Hfc {
  status?: { updates?: unknown[]; components?: unknown[]; conditions?: { type: string; status: string; reason: string; message: string }[] };
}
const hfc = (name: string): Hfc | undefined => {
  const r = kubectl(['get', 'hostfirmwarecomponents', name, '-n', NS, '-o', 'json'], { check: false });
  return r.status === 0 ? (JSON.parse(r.stdout) as Hfc) : undefined;
};
const condition = (h: Hfc | undefined, type: string) => h?.status?.conditions?.find((c) => c.type === type);
const view = (name: string) => suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery);

describe('HostFirmwareComponents in Kubernetes mode', () => {
  it('refuses invalid updates with nothing sent, flashes valid ones through Ironic as the firmware clean step', async () => {
    // A name of its own per attempt: a retry of this test in the same namespace must not meet the first attempt's host.
    const name = uniq('hfc');
    kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'pw' })) });
    kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(hostDoc(name, fakeHostSpec(name))) });
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=180s']);
    const cleansBefore = (await view(name)).operations.filter((o) => o.kind === 'clean').length;

    apply({ kind: 'HostFirmwareComponents', metadata: { name }, spec: { updates: [{ component: 'nic', url: 'http://127.0.0.1/nic.bin' }, { component: 'bios', url: 'ftp://127.0.0.1/bios.bin' }] } });
    const invalid = await waitFor('Valid false', async () => {
      const h = hfc(name);
      return condition(h, 'Valid')?.status === 'False' ? h : undefined;
    }, { timeoutMs: 90_000 });
    expect(condition(invalid, 'ChangeDetected')?.status).toBe('True');
    expect(condition(invalid, 'Valid')).toMatchObject({ reason: 'InvalidComponent', message: expect.stringContaining('spec.updates[0].component: unknown firmware component "nic"; accepted: bios, bmc') });
    // fake-hardware's firmware interface caches no components: Ironic reports none.
    expect(invalid.status?.components).toEqual([]);
    const warnings = await waitFor('two Warning events', async () => {
      const r = kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.kind=HostFirmwareComponents,involvedObject.name=${name}`, '-o', 'json']);
      const items = (JSON.parse(r.stdout) as { items: { type: string; reason: string; message: string }[] }).items.filter((e) => e.type === 'Warning' && e.reason === 'ValidationFailed');
      return items.length >= 2 ? items.map((e) => e.message).sort() : undefined;
    }, { timeoutMs: 60_000 });
    expect(warnings).toEqual([
      'Invalid Firmware Components: spec.updates[0].component: unknown firmware component "nic"; accepted: bios, bmc',
      'Invalid Firmware Components: spec.updates[1].url: must be an http or https URL of at most 2048 characters (the BMC fetches it)',
    ]);
    const held = await view(name);
    expect(held.cleanRequest).toBeUndefined();
    expect(held.operations.filter((o) => o.kind === 'clean')).toHaveLength(cleansBefore);

    const updates = [{ component: 'bios', url: 'http://127.0.0.1/firmware/bios-2.1.0.bin' }];
    kubectl(['patch', 'hostfirmwarecomponents', name, '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { updates } })]);
    const handed = await waitFor('status.updates', async () => {
      const h = hfc(name);
      return h?.status?.updates && condition(h, 'ChangeDetected')?.status === 'False' ? h : undefined;
    }, { timeoutMs: 120_000 });
    expect(handed.status?.updates).toEqual(updates);
    expect(condition(handed, 'Valid')).toMatchObject({ status: 'True', reason: 'OK' });
    const done = await waitFor('the firmware clean ran', async () => {
      const v = await view(name);
      const cleans = v.operations.filter((o) => o.kind === 'clean');
      return v.status.provisioning.state === 'available' && !v.cleanRequest && cleans.length === cleansBefore + 1 ? cleans : undefined;
    }, { timeoutMs: 180_000 });
    expect(done.at(-1)).toMatchObject({ outcome: 'succeeded', steps: ['firmware'] });
  }, 600_000);
});
