/**
 * HostFirmwareSettings / HostFirmwareComponents changes on a PROVISIONED BareMetalHost (patch
 * firmware-servicing), end to end: a real kube-apiserver, the controller and a worker in Kubernetes
 * mode as their own processes, the test stack's Temporal and Ironic (fake-hardware). The change is
 * held by the host workflow with the reason in a SettingsHeld Event; without a HostUpdatePolicy a
 * reboot annotation only reboots (nothing serviced, the BIOS unchanged); a spec put back withdraws
 * it; with the policy the annotation's reboot is preceded by one service operation (firmware, then
 * bios), the BIOS read back from Ironic into the HFS status and the HFC's status.updates set. A change
 * still held when the host is deprovisioned is its clean once available, its images flashed once.
 */
import { describe, expect, it } from 'vitest';
import { holdForServicing } from '../../k8s/controller/firmware-hold';
import type { ComponentsOutcome } from '../../k8s/controller/firmware-components';
import type { CleanStep } from '../../model/clean';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import { IRONIC_URL } from '../support/env';
import { uniq, waitFor } from '../support/harness';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-fwsvc');
const suite = useShimSuite(NS, uniq('tq-fwsvc'), { METALFLOW_FIRMWARE_RESYNC_SECONDS: '5' });
const IMAGE = { url: 'http://127.0.0.1/images/fwsvc.qcow2', checksum: 'e'.repeat(64), checksumType: 'sha256', format: 'qcow2' };
const UPDATES = [{ component: 'bios', url: 'http://127.0.0.1/firmware/bios-2.1.0.bin' }];

const apply = (doc: Record<string, unknown>) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify({ apiVersion: 'metal3.io/v1alpha1', ...doc }) });
const get = <T>(kind: string, name: string): T | undefined => {
  const r = kubectl(['get', kind, name, '-n', NS, '-o', 'json'], { check: false });
  return r.status === 0 ? (JSON.parse(r.stdout) as T) : undefined;
};
interface Status {
  status?: { settings?: Record<string, string>; updates?: unknown[]; conditions?: { type: string; status: string }[] };
}
const changeDetected = (o: Status | undefined) => o?.status?.conditions?.find((c) => c.type === 'ChangeDetected')?.status;
const view = (name: string): Promise<HostView> => suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery);
const events = (name: string): { reason: string; message: string }[] =>
  JSON.parse(kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']).stdout).items;
const heldEvent = (name: string, pattern: RegExp) =>
  waitFor(`a SettingsHeld Event matching ${String(pattern)}`, async () => events(name).find((e) => e.reason === 'SettingsHeld' && pattern.test(e.message)), { timeoutMs: 120_000 });
const biosOf = async (nodeId: string): Promise<Record<string, string | null>> => {
  const res = await fetch(`${IRONIC_URL}/v1/nodes/${nodeId}/bios`, { headers: { 'x-openstack-ironic-api-version': '1.87' } });
  const { bios } = (await res.json()) as { bios: { name: string; value: string | null }[] };
  return Object.fromEntries(bios.map((b) => [b.name, b.value]));
};
/** The one-shot reboot annotation, set once the previous one was served (the shim removes it then). */
async function rebootAnnotation(name: string, reboots: number): Promise<HostView> {
  await waitFor('no reboot annotation left', async () => {
    const bmh = get<{ metadata: { annotations?: Record<string, string> } }>('bmh', name);
    return bmh && bmh.metadata.annotations?.['reboot.metal3.io'] === undefined ? true : undefined;
  }, { timeoutMs: 60_000 });
  kubectl(['annotate', 'bmh', name, '-n', NS, '--overwrite', 'reboot.metal3.io=']);
  return waitFor('rebooted', async () => {
    const v = await view(name);
    return !v.currentOperation && v.operations.filter((o) => o.kind === 'reboot' && o.outcome === 'succeeded').length === reboots ? v : undefined;
  }, { timeoutMs: 240_000 });
}

/** A provisioned BareMetalHost whose HFS status Ironic has filled. */
async function provisioned(prefix: string): Promise<{ name: string; nodeId: string }> {
  const name = uniq(prefix);
  apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'x' }));
  // spec.firmware gives the fake BIOS a setting while preparing (fake-hardware reports none before), so the HFS can name it.
  apply(hostDoc(name, fakeHostSpec(name, { image: IMAGE, firmware: { virtualizationEnabled: true } })));
  kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=provisioned', `bmh/${name}`, '--timeout=240s']);
  const nodeId = (await view(name)).status.provisioning.ID;
  await waitFor('the HFS status read from Ironic', async () => (get<Status>('hfs', name)?.status?.settings?.ProcVirtualization === 'Enabled' ? true : undefined), { timeoutMs: 120_000 });
  return { name, nodeId };
}

describe('HostFirmwareSettings / HostFirmwareComponents on a provisioned BareMetalHost', () => {
  it('holds the change with the reason, services it at the reboot annotation only under a HostUpdatePolicy', async () => {
    const { name, nodeId } = await provisioned('fwsvc');

    const hfsDoc = (value: string) => ({ kind: 'HostFirmwareSettings', metadata: { name }, spec: { settings: { ProcVirtualization: value } } });
    apply(hfsDoc('Disabled'));
    await heldEvent(name, /^HostFirmwareSettings change \(ProcVirtualization\) held while the host is provisioned: needs a HostUpdatePolicy with firmwareSettings: onReboot to be applied by servicing \(the host has none\)/);
    expect((await view(name)).firmwareHeld?.request.steps).toEqual([{ name: 'bios', settings: { ProcVirtualization: 'Disabled' } }]);

    // No policy: the annotation only reboots; nothing is serviced, Ironic's BIOS is as it was.
    const rebooted = await rebootAnnotation(name, 1);
    expect(rebooted.operations.some((o) => o.kind === 'service')).toBe(false);
    expect(rebooted.firmwareHeld).toBeDefined();
    expect(await biosOf(nodeId)).toMatchObject({ ProcVirtualization: 'Enabled' });
    expect(changeDetected(get<Status>('hfs', name))).toBe('True');

    // Put back to what Ironic reports: withdrawn. Then asked again, with firmware updates beside it.
    apply(hfsDoc('Enabled'));
    await waitFor('withdrawn', async () => ((await view(name)).firmwareHeld === undefined ? true : undefined), { timeoutMs: 120_000 });
    apply(hfsDoc('Disabled'));
    apply({ kind: 'HostFirmwareComponents', metadata: { name }, spec: { updates: UPDATES } });
    const both = await waitFor('both held', async () => {
      const steps = (await view(name)).firmwareHeld?.request.steps.map((s) => s.name);
      return steps?.length === 2 ? steps : undefined;
    }, { timeoutMs: 120_000 });
    expect(both).toEqual(['firmware', 'bios']);

    apply({ kind: 'HostUpdatePolicy', metadata: { name }, spec: { firmwareSettings: 'onReboot', firmwareUpdates: 'onReboot' } });
    await heldEvent(name, /HostFirmwareSettings change \(ProcVirtualization\) held while the host is provisioned: applied by servicing at the host's next reboot/);
    expect((await view(name)).operations.some((o) => o.kind === 'service')).toBe(false);

    const done = await rebootAnnotation(name, 2);
    const services = done.operations.filter((o) => o.kind === 'service');
    expect(services).toHaveLength(1);
    expect(services[0]).toMatchObject({ outcome: 'succeeded', steps: ['firmware', 'bios'] });
    expect(done.operations.map((o) => o.kind).lastIndexOf('reboot')).toBeGreaterThan(done.operations.indexOf(services[0]!));
    expect(done.firmwareHeld).toBeUndefined();
    expect(await biosOf(nodeId)).toMatchObject({ ProcVirtualization: 'Disabled' });
    const hfs = await waitFor('the HFS status read back', async () => {
      const o = get<Status>('hfs', name);
      return o?.status?.settings?.ProcVirtualization === 'Disabled' && changeDetected(o) === 'False' ? o : undefined;
    }, { timeoutMs: 120_000 });
    expect(hfs.status?.settings).toMatchObject({ ProcVirtualization: 'Disabled' });
    const hfc = await waitFor('the HFC status.updates', async () => {
      const o = get<Status>('hostfirmwarecomponents', name);
      return o?.status?.updates && changeDetected(o) === 'False' ? o : undefined;
    }, { timeoutMs: 120_000 });
    expect(hfc.status?.updates).toEqual(UPDATES);
    expect(events(name).some((e) => e.reason === 'ServiceSucceeded')).toBe(true);

    // A firmware read begun before that service ended still reports the BIOS as it was (Enabled): the controller
    // must not hold the serviced change again from it (it did, seldom: the next reboot serviced it a second time).
    const serviced = (await view(name)).firmwareServiced;
    expect(serviced).toBeDefined();
    const logs: string[] = [];
    const deps = { client: suite.client, log: (m: string) => logs.push(m), event: async () => undefined };
    const noComponents: ComponentsOutcome = { changeDetected: false, handed: async () => undefined };
    const fromOldRead: CleanStep[] = [{ name: 'bios', settings: { ProcVirtualization: 'Disabled' } }];
    const hfsObject = { metadata: { name, namespace: NS } };
    expect(await holdForServicing(deps, hfsObject, fromOldRead, noComponents, Date.parse(serviced!.at) - 1000)).toBe('stale');
    expect((await view(name)).firmwareHeld).toBeUndefined();
    expect(logs.join('\n')).toMatch(/begun before the last service ended/);
  }, 900_000);

  // Patch held-firmware-kept: the host takes its held change as its clean once deprovisioned; the controller hands
  // the images over (status.updates) instead of asking them a second time.
  it('applies a held change as the clean of the host its deprovisioning leaves available, the images flashed once', async () => {
    const { name, nodeId } = await provisioned('fwdep');
    apply({ kind: 'HostFirmwareSettings', metadata: { name }, spec: { settings: { ProcVirtualization: 'Disabled' } } });
    apply({ kind: 'HostFirmwareComponents', metadata: { name }, spec: { updates: UPDATES } });
    const held = await waitFor('both held', async () => {
      const v = await view(name);
      return v.firmwareHeld?.request.steps.length === 2 ? v : undefined;
    }, { timeoutMs: 120_000 });
    // spec.firmware's own clean while the host was first prepared.
    const cleansBefore = held.operations.filter((o) => o.kind === 'clean').length;

    kubectl(['patch', 'bmh', name, '-n', NS, '--type=json', '-p', JSON.stringify([{ op: 'remove', path: '/spec/image' }])]);
    const hfc = await waitFor('the HFC status.updates', async () => {
      const o = get<Status>('hostfirmwarecomponents', name);
      return o?.status?.updates && changeDetected(o) === 'False' ? o : undefined;
    }, { timeoutMs: 300_000 });
    expect(hfc.status?.updates).toEqual(UPDATES);
    await waitFor('the HFS status read back', async () => {
      const o = get<Status>('hfs', name);
      return o?.status?.settings?.ProcVirtualization === 'Disabled' && changeDetected(o) === 'False' ? true : undefined;
    }, { timeoutMs: 120_000 });
    const done = await waitFor('available and idle', async () => {
      const v = await view(name);
      return v.status.provisioning.state === 'available' && !v.currentOperation && !v.cleanRequest ? v : undefined;
    }, { timeoutMs: 120_000 });
    const cleans = done.operations.filter((o) => o.kind === 'clean').slice(cleansBefore);
    expect(cleans.map((o) => [o.outcome, o.steps])).toEqual([['succeeded', ['firmware', 'bios']]]);
    expect(done.firmwareHeld).toBeUndefined();
    expect(await biosOf(nodeId)).toMatchObject({ ProcVirtualization: 'Disabled' });
  }, 900_000);
});
