/**
 * The HostFirmwareSettings controller on a real kube-apiserver, the worker and
 * controller as their own processes, the test stack's Temporal and Ironic: the
 * HostFirmwareSettings created for a registered host, status.settings and a
 * shared FirmwareSchema from Ironic's BIOS registry (given to fake-hardware
 * nodes through Ironic's own fake bios interface), an invalid spec refused
 * with Valid false and Warning Events and nothing sent, a valid change applied
 * as the host's bios clean step.
 */
import { describe, expect, it } from 'vitest';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery } from '../../contracts/host';
import { IRONIC_URL } from '../support/env';
import { uniq, waitFor } from '../support/harness';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-fw');
const taskQueue = uniq('tq-fw');
const suite = useShimSuite(NS, taskQueue, { METALFLOW_FIRMWARE_RESYNC_SECONDS: '2' });

const apply = (doc: Record<string, unknown>) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc) });
const json = <T>(args: string[]): T | undefined => {
  const r = kubectl([...args, '-n', NS, '-o', 'json'], { check: false });
  return r.status === 0 ? (JSON.parse(r.stdout) as T) : undefined;
};
interface Hfs {
  metadata: { uid: string; ownerReferences?: { kind: string; name: string; controller?: boolean }[] };
  spec: { settings: Record<string, unknown> };
  status?: { settings?: Record<string, string>; schema?: { namespace: string; name: string }; conditions?: { type: string; status: string; reason: string; message: string }[] };
}
const hfs = (name: string) => json<Hfs>(['get', 'hostfirmwaresettings', name]);
const condition = (h: Hfs | undefined, type: string) => h?.status?.conditions?.find((c) => c.type === type)?.status;
const ironic = (method: string, path: string, body?: unknown) =>
  fetch(`${IRONIC_URL}${path}`, { method, headers: { 'x-openstack-ironic-api-version': '1.81', 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
const provisionState = async (nodeId: string) => ((await (await ironic('GET', `/v1/nodes/${nodeId}?fields=provision_state`)).json()) as { provision_state: string }).provision_state;
const view = (name: string) => suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery);

/** A registry for the fake bios interface, which keeps the registry fields of what it stores. */
const REGISTRY = [
  { name: 'ProcVirtualization', value: 'Enabled', attribute_type: 'Enumeration', allowable_values: ['Enabled', 'Disabled'] },
  { name: 'SriovGlobalEnable', value: 'Disabled', attribute_type: 'Enumeration', allowable_values: ['Enabled', 'Disabled'], read_only: true },
  { name: 'NumCores', value: '16', attribute_type: 'Integer', lower_bound: 1, upper_bound: 64 },
];

async function registeredHost(name: string): Promise<string> {
  apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'pw' }));
  apply(hostDoc(name, fakeHostSpec(name)));
  kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=180s']);
  const nodeId = json<{ status: { provisioning: { ID: string } } }>(['get', 'bmh', name])!.status.provisioning.ID;
  // Stored through Ironic itself while the host is available (its node manageable), as a BMC's registry would be read.
  expect((await ironic('PUT', `/v1/nodes/${nodeId}/states/provision`, { target: 'clean', clean_steps: [{ interface: 'bios', step: 'apply_configuration', args: { settings: REGISTRY } }] })).status).toBe(202);
  await waitFor('the registry stored', async () => ((await provisionState(nodeId)) === 'manageable' ? true : undefined), { timeoutMs: 60_000 });
  return nodeId;
}

describe('HostFirmwareSettings and FirmwareSchema in Kubernetes mode', () => {
  it('fills status from Ironic with a shared schema, refuses an invalid spec with nothing sent, applies a valid one as a bios clean step', async () => {
    // Hosts of this attempt's own: vitest runs a failed test once more, and a retry must not meet the first
    // attempt's hosts (a change of theirs being applied, their Events, their clean counts).
    const [a, b] = [uniq('fw'), uniq('fw')];
    const [nodeId] = await Promise.all([registeredHost(a), registeredHost(b)]);

    // Created as BMO creates it: spec.settings empty, the host its controller.
    const filled = await waitFor('status.settings from Ironic', async () => {
      const h = hfs(a);
      return h?.status?.settings?.NumCores === '16' && condition(h, 'Valid') === 'True' ? h : undefined;
    }, { timeoutMs: 120_000 });
    expect(filled.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'BareMetalHost', name: a, controller: true })]);
    expect(filled.spec.settings).toEqual({});
    expect(filled.status?.settings).toEqual({ ProcVirtualization: 'Enabled', SriovGlobalEnable: 'Disabled', NumCores: '16' });
    expect(condition(filled, 'ChangeDetected')).toBe('False');
    const ref = filled.status!.schema!;
    expect(ref).toEqual({ namespace: NS, name: expect.stringMatching(/^schema-[0-9a-f]{8}$/) });
    // Read before its registry was stored, the second host first had the schema of no settings.
    await waitFor('the second host on the same schema', async () => (hfs(b)?.status?.schema?.name === ref.name ? true : undefined), { timeoutMs: 120_000 });
    const schema = json<{ metadata: { ownerReferences: { name: string }[] }; spec: { schema: Record<string, unknown> } }>(['get', 'firmwareschemas', ref.name])!;
    expect(schema.spec.schema.SriovGlobalEnable).toEqual({ attribute_type: 'Enumeration', allowable_values: ['Enabled', 'Disabled'], read_only: true });
    expect(schema.spec.schema.NumCores).toEqual({ attribute_type: 'Integer', lower_bound: 1, upper_bound: 64 });
    // Both hosts own it (an earlier attempt's hosts, of the same registry, may own it too).
    expect(schema.metadata.ownerReferences.map((o) => o.name)).toEqual(expect.arrayContaining([a, b]));

    // Invalid: Valid false, a Warning Event per setting, the host left alone.
    const cleansBefore = (await view(a)).operations.filter((o) => o.kind === 'clean').length;
    kubectl(['patch', 'hostfirmwaresettings', a, '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { settings: { SriovGlobalEnable: 'Enabled', NumCores: 65, Turbo: 'On' } } })]);
    const invalid = await waitFor('Valid false', async () => {
      const h = hfs(a);
      return condition(h, 'Valid') === 'False' ? h : undefined;
    }, { timeoutMs: 60_000 });
    expect(condition(invalid, 'ChangeDetected')).toBe('True');
    expect(invalid.status?.conditions?.find((c) => c.type === 'Valid')).toMatchObject({ reason: 'ConfigurationError', message: 'Invalid BIOS setting' });
    const events = await waitFor('three Warning events', async () => {
      const list = json<{ items: { type: string; reason: string; message: string }[] }>(['get', 'events', '--field-selector', `involvedObject.kind=HostFirmwareSettings,involvedObject.name=${a}`]);
      const warnings = (list?.items ?? []).filter((e) => e.type === 'Warning' && e.reason === 'ValidationFailed').map((e) => e.message).sort();
      return warnings.length >= 3 ? warnings : undefined;
    }, { timeoutMs: 60_000 });
    expect(events).toEqual([
      'Invalid BIOS setting: spec.settings.NumCores: 65 is out of range; accepted: 1 to 64',
      'Invalid BIOS setting: spec.settings.SriovGlobalEnable: is read-only in the BIOS registry; remove it',
      'Invalid BIOS setting: spec.settings.Turbo: not in status.settings: Ironic reports no such setting for this host',
    ]);
    const held = await view(a);
    expect(held.status.provisioning.state).toBe('available');
    expect(held.cleanRequest).toBeUndefined();
    expect(held.operations.filter((o) => o.kind === 'clean')).toHaveLength(cleansBefore);
    expect(await provisionState(nodeId)).toBe('manageable');

    // Valid: the changed settings go to the host workflow as one bios clean step, and Ironic then reports them.
    kubectl(['patch', 'hostfirmwaresettings', a, '-n', NS, '--type=json', '-p', JSON.stringify([{ op: 'replace', path: '/spec/settings', value: { ProcVirtualization: 'Disabled', NumCores: 8 } }])]);
    const applied = await waitFor('applied and read back', async () => {
      const h = hfs(a);
      return h?.status?.settings?.ProcVirtualization === 'Disabled' && condition(h, 'ChangeDetected') === 'False' ? h : undefined;
    }, { timeoutMs: 240_000 });
    expect(applied.status?.settings?.NumCores).toBe('8');
    expect(condition(applied, 'Valid')).toBe('True');
    const after = await waitFor('available again', async () => {
      const v = await view(a);
      return v.status.provisioning.state === 'available' && !v.cleanRequest ? v : undefined;
    }, { timeoutMs: 120_000 });
    const cleans = after.operations.filter((o) => o.kind === 'clean');
    expect(cleans).toHaveLength(cleansBefore + 1);
    expect(cleans.at(-1)).toMatchObject({ outcome: 'succeeded' });
  }, 600_000);
});
