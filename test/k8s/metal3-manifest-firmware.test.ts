/**
 * Issue 12 end to end in Kubernetes mode: ONE Metal3 manifest (a BareMetalHost with spec.firmware,
 * its HostFirmwareSettings with spec.settings, its HostFirmwareComponents with spec.updates) applied
 * to a real kube-apiserver, the controller and a worker as their own processes, the test stack's
 * Temporal and Ironic (fake-hardware). The host reaches available with spec.firmware applied while
 * preparing, then the HFS settings and the HFC firmware as clean steps; what Ironic holds is read
 * back from Ironic; each step shows as an activity summary in the host workflow's history (what the
 * Temporal UI shows). Then an image (provisioned), a HostUpdatePolicy and a changed spec.firmware
 * serviced at a reboot (one `service` verb). No spec.raid: docs/cleaning-and-firmware.md says why.
 */
import { describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView, type OperationRecord } from '../../contracts/host';
import { IRONIC_URL } from '../support/env';
import { operationEvents, operationLocalActivities } from '../support/operation-history';
import { uniq, waitFor } from '../support/harness';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-m3fw');
const suite = useShimSuite(NS, uniq('tq-m3fw'), { METALFLOW_FIRMWARE_RESYNC_SECONDS: '2' });
const IMAGE = { url: 'http://127.0.0.1/images/m3fw.qcow2', checksum: 'e'.repeat(64), checksumType: 'sha256', format: 'qcow2' };
const UPDATES = [{ component: 'bios', url: 'http://127.0.0.1/firmware/bios-2.2.0.bin' }];

const apply = (doc: Record<string, unknown>) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc) });
const get = <T>(kind: string, name: string): T => JSON.parse(kubectl(['get', kind, name, '-n', NS, '-o', 'json']).stdout) as T;
const view = (name: string): Promise<HostView> => suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery);
const biosOf = async (nodeId: string): Promise<Record<string, string | null>> => {
  const res = await fetch(`${IRONIC_URL}/v1/nodes/${nodeId}/bios`, { headers: { 'x-openstack-ironic-api-version': '1.81' } });
  return Object.fromEntries(((await res.json()) as { bios: { name: string; value: string | null }[] }).bios.map((b) => [b.name, b.value]));
};
interface Conditioned { status?: { conditions?: { type: string; status: string }[]; settings?: Record<string, string>; updates?: unknown[] } }
const condition = (o: Conditioned, type: string) => o.status?.conditions?.find((c) => c.type === type)?.status;

/** The activity summaries of one operation in the host workflow's history: the lines the Temporal UI shows. */
/** The node-settings check (a local activity) first, then the operation's activities. */
const summariesOf = async (name: string, op: OperationRecord): Promise<string[]> => [
  ...(await operationLocalActivities(suite.client, { namespace: NS, name }, op)),
  ...(await operationEvents(suite.client, { namespace: NS, name }, op))
    .map((e) => e.activityTaskScheduledEventAttributes && e.userMetadata?.summary)
    .filter((s) => s)
    .map((s) => String(defaultPayloadConverter.fromPayload(s!))),
];
const hfsEvents = (name: string): string[] =>
  (JSON.parse(kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.kind=HostFirmwareSettings,involvedObject.name=${name}`, '-o', 'json']).stdout) as { items: { type: string; reason: string; message: string }[] })
    .items.map((e) => `${e.type} ${e.reason}: ${e.message}`);

describe('a Metal3 manifest with spec.firmware, HostFirmwareSettings and HostFirmwareComponents', () => {
  it('drives the host to available with everything applied, then services a provisioned host under its HostUpdatePolicy', async () => {
    const name = uniq('m3fw');
    const spec = fakeHostSpec(name, { firmware: { virtualizationEnabled: true, simultaneousMultithreadingEnabled: true } });
    // One manifest, as a Metal3 user applies it. The HFS names a setting spec.firmware gives the host
    // (fake-hardware has no BIOS registry before something stores one) and wins over it, as in BMO,
    // whose preparing runs the HFS settings after spec.firmware's.
    apply({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'pw' }),
        hostDoc(name, spec),
        { apiVersion: 'metal3.io/v1alpha1', kind: 'HostFirmwareSettings', metadata: { name }, spec: { settings: { LogicalProc: 'Disabled' } } },
        { apiVersion: 'metal3.io/v1alpha1', kind: 'HostFirmwareComponents', metadata: { name }, spec: { updates: UPDATES } },
      ],
    });

    const settled = await waitFor('available with the HFS and HFC applied', async () => {
      const v = await view(name);
      const hfs = get<Conditioned>('hostfirmwaresettings', name);
      const hfc = get<Conditioned>('hostfirmwarecomponents', name);
      const steps = v.operations.filter((o) => o.kind === 'clean' && o.outcome === 'succeeded').flatMap((o) => o.steps ?? []);
      const done = v.status.provisioning.state === 'available' && !v.currentOperation && !v.cleanRequest;
      return done && steps.includes('firmware') && hfs.status?.settings?.LogicalProc === 'Disabled' && condition(hfs, 'ChangeDetected') === 'False' &&
        hfc.status?.updates && condition(hfc, 'ChangeDetected') === 'False' ? { v, hfs, hfc } : undefined;
    }, { timeoutMs: 420_000, intervalMs: 2_000 });
    const nodeId = settled.v.status.provisioning.ID;
    const cleans = settled.v.operations.filter((o) => o.kind === 'clean');
    // spec.firmware while preparing, before the host was first available; then the HFC and HFS steps.
    expect(cleans[0]).toMatchObject({ state: 'preparing', outcome: 'succeeded', steps: ['bios'] });
    expect(cleans.every((o) => o.outcome === 'succeeded')).toBe(true);
    expect(cleans.slice(1).flatMap((o) => o.steps ?? []).sort()).toEqual(['bios', 'firmware']);
    expect(settled.v.status.provisioning.firmware).toEqual({ virtualizationEnabled: true, simultaneousMultithreadingEnabled: true });
    expect(settled.hfc.status?.updates).toEqual(UPDATES);
    expect(condition(settled.hfs, 'Valid')).toBe('True');
    // Read back from Ironic: the HFS setting. (fake bios apply_configuration keeps only the settings of
    // its last call, so spec.firmware's ProcVirtualization is gone from Ironic: a fake-only behaviour.)
    expect(await biosOf(nodeId)).toMatchObject({ LogicalProc: 'Disabled' });
    // Not refused while Ironic reported no settings yet (BMO warns only once some are reported), then applied.
    // (The firmware step goes in the same request when both are pending at once, as they were here.)
    const events = hfsEvents(name);
    expect(events.filter((e) => e.includes('ValidationFailed'))).toEqual([]);
    expect(events).toContainEqual(expect.stringMatching(/^Normal SettingsApplying: applying (firmware \(bios\), )?bios \(LogicalProc\) as the host's clean steps$/));
    // Each step its own activity in the host workflow's history, as the Temporal UI lists it, after the spec's node settings.
    for (const op of cleans) expect(await summariesOf(name, op)).toEqual([`${op.seq}-clean: syncNodeSettings`, ...(op.steps ?? []).map((step) => `${op.seq}-clean: cleanNode ${step}`)]);

    // An image: provisioned. Then a changed spec.firmware, held until a policy allows servicing at a reboot.
    const provisionedSpec = { ...spec, image: IMAGE };
    apply(hostDoc(name, provisionedSpec));
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=provisioned', `bmh/${name}`, '--timeout=300s']);
    apply({ apiVersion: 'metal3.io/v1alpha1', kind: 'HostUpdatePolicy', metadata: { name }, spec: { firmwareSettings: 'onReboot' } });
    await waitFor('the policy handed to the workflow', async () => (await view(name)).updatePolicy?.firmwareSettings === 'onReboot', { timeoutMs: 120_000 });
    apply(hostDoc(name, { ...provisionedSpec, firmware: { virtualizationEnabled: false, simultaneousMultithreadingEnabled: true } }));
    await waitFor('the change held for the reboot', async () => (/next reboot/.test((await view(name)).settingsHeld ?? '') ? true : undefined), { timeoutMs: 120_000 });
    expect((await view(name)).operations.some((o) => o.kind === 'service')).toBe(false);

    kubectl(['annotate', 'bmh', name, '-n', NS, '--overwrite', 'reboot.metal3.io=']);
    // The service operation, then the reboot the annotation asked for, both ended.
    const done = await waitFor('the service operation and the reboot ended', async () => {
      const v = await view(name);
      const ended = (kind: string) => v.operations.some((o) => o.kind === kind && o.outcome);
      return ended('service') && ended('reboot') && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 240_000 });
    expect(done.operations.filter((o) => o.kind === 'service')).toEqual([expect.objectContaining({ outcome: 'succeeded', steps: ['bios'] })]);
    expect(done.status.provisioning.state).toBe('provisioned');
    expect(await biosOf(nodeId)).toMatchObject({ ProcVirtualization: 'Disabled', LogicalProc: 'Enabled' });
    const bmh = await waitFor('the status published', async () => {
      const o = get<{ status?: { provisioning: { firmware?: unknown } } }>('bmh', name);
      return (o.status?.provisioning.firmware as { virtualizationEnabled?: boolean } | undefined)?.virtualizationEnabled === false ? o.status : undefined;
    }, { timeoutMs: 60_000 });
    expect(bmh?.provisioning.firmware).toEqual({ virtualizationEnabled: false, simultaneousMultithreadingEnabled: true });
    const service = done.operations.find((o) => o.kind === 'service')!;
    expect(await summariesOf(name, service)).toEqual([`${service.seq}-service: syncNodeSettings`, `${service.seq}-service: serviceNode bios`]);
    expect(done.operations.some((o) => o.kind === 'reboot' && o.outcome === 'succeeded')).toBe(true);
  }, 900_000);
});
