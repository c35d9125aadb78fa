/**
 * Servicing in Kubernetes mode, end to end: a real kube-apiserver, the controller and a worker in
 * Kubernetes mode as their own processes, the test stack's Temporal and Ironic (fake-hardware).
 * A provisioned BareMetalHost's changed spec.firmware is held with the reason in a SettingsHeld
 * Event; a HostUpdatePolicy of the host's name (firmwareSettings: onReboot) lets the reboot
 * annotation service it, the status showing what was applied.
 */
import { describe, expect, it } from 'vitest';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import { uniq, waitFor } from '../support/harness';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-svc');
const suite = useShimSuite(NS, uniq('tq-svc'));
const IMAGE = { url: 'http://127.0.0.1/images/svc.qcow2', checksum: 'd'.repeat(64), checksumType: 'sha256', format: 'qcow2' };

const apply = (doc: Record<string, unknown>) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc) });
const waitState = (name: string, state: string) =>
  kubectl(['wait', '-n', NS, `--for=jsonpath={.status.provisioning.state}=${state}`, `bmh/${name}`, '--timeout=180s']);
const view = (name: string): Promise<HostView> => suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery);
const events = (name: string): { reason: string; message: string }[] =>
  JSON.parse(kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']).stdout).items;
const heldEvent = (name: string, pattern: RegExp) =>
  waitFor(`a SettingsHeld Event matching ${String(pattern)}`, async () => events(name).find((e) => e.reason === 'SettingsHeld' && pattern.test(e.message)), { timeoutMs: 120_000 });

describe('servicing a provisioned BareMetalHost under its HostUpdatePolicy', () => {
  it('holds spec.firmware with the reason in an Event, then services it at the reboot once the policy allows it', async () => {
    const name = uniq('svc');
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'x' }));
    const spec = fakeHostSpec(name, { image: IMAGE });
    apply(hostDoc(name, spec));
    waitState(name, 'provisioned');

    apply(hostDoc(name, { ...spec, firmware: { virtualizationEnabled: true } }));
    await heldEvent(name, /^spec\.firmware changed while the host is provisioned: .*HostUpdatePolicy with firmwareSettings: onReboot \(the host has none\)/);

    apply({ apiVersion: 'metal3.io/v1alpha1', kind: 'HostUpdatePolicy', metadata: { name }, spec: { firmwareSettings: 'onReboot' } });
    await waitFor('the policy handed to the workflow', async () => (await view(name)).updatePolicy?.firmwareSettings === 'onReboot', { timeoutMs: 120_000 });
    await heldEvent(name, /applied by servicing at the host's next reboot/);
    expect((await view(name)).operations.some((o) => o.kind === 'service')).toBe(false);

    kubectl(['annotate', 'bmh', name, '-n', NS, '--overwrite', 'reboot.metal3.io=']);
    const done = await waitFor('serviced and rebooted', async () => {
      const v = await view(name);
      return !v.currentOperation && v.operations.some((o) => o.kind === 'reboot' && o.outcome === 'succeeded') ? v : undefined;
    }, { timeoutMs: 180_000 });
    expect(done.operations.find((o) => o.kind === 'service')).toMatchObject({ outcome: 'succeeded', steps: ['bios'] });
    const bmh = await waitFor('the status published', async () => {
      const o = JSON.parse(kubectl(['get', 'bmh', name, '-n', NS, '-o', 'json']).stdout) as { status?: { operationalStatus: string; provisioning: { state: string; firmware?: unknown } } };
      return o.status?.provisioning.firmware ? o.status : undefined;
    }, { timeoutMs: 60_000 });
    expect(bmh).toMatchObject({ operationalStatus: 'OK', provisioning: { state: 'provisioned', firmware: { virtualizationEnabled: true } } });
    expect(events(name).some((e) => e.reason === 'ServiceSucceeded')).toBe(true);
  }, 600_000);
});
