/**
 * Metal3's annotations and credentials handling in the Kubernetes shim, end
 * to end: a real kube-apiserver, the controller and a worker in Kubernetes
 * mode as their own processes, the test stack's Temporal and Ironic
 * (fake-hardware) and, for credentials, its sushy-tools Redfish BMC.
 */
import { decodedHistoryTexts, findSecrets } from '../../bench/support/history-secrets';
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView, type OperationKind } from '../../contracts/host';
import { IRONIC_URL, SUSHY_URL } from '../support/env';
import { randomMac, uniq, waitFor } from '../support/harness';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-ann');
const suite = useShimSuite(NS, uniq('tq-ann'));
const ironic = new IronicClient({ url: IRONIC_URL });
const IMAGE = { url: 'http://127.0.0.1/images/ann.qcow2', checksum: 'd'.repeat(64), checksumType: 'sha256', format: 'qcow2' };
/** The Metal3 user guide's external inspection example (docs/user-guide/src/bmo/external_inspection.md), unchanged. */
const GUIDE_HARDWARE =
  '{"systemVendor":{"manufacturer":"QEMU", "productName":"Standard PC (Q35 + ICH9, 2009)","serialNumber":""}, "firmware":{"bios":{"date":"","vendor":"","version":""}},"ramMebibytes":4096, "nics":[{"name":"eth0","model":"0x1af4 0x0001","mac":"00:b7:8b:bb:3d:f6", "ip":"172.22.0.64","speedGbps":0,"vlanId":0,"pxe":true}], "storage":[{"name":"/dev/sda","rotational":true,"sizeBytes":53687091200, "vendor":"QEMU", "model":"QEMU HARDDISK","serialNumber":"drive-scsi0-0-0-0", "hctl":"6:0:0:0"}],"cpu":{"arch":"x86_64", "model":"Intel Xeon E3-12xx v2 (IvyBridge)","clockMegahertz":2494.224, "flags":["foo"],"count":4},"hostname":"hwdAnnotation-0"}';

interface Bmh {
  metadata: { name: string; annotations?: Record<string, string>; resourceVersion: string };
  spec: Record<string, unknown>;
  status?: {
    operationalStatus: string;
    errorType?: string;
    errorMessage: string;
    poweredOn: boolean;
    hardware?: Record<string, unknown>;
    provisioning: { state: string; ID: string; image?: { url: string } };
    operationHistory: Record<string, { start?: string; end?: string }>;
    goodCredentials?: { credentials?: { name: string; namespace?: string }; credentialsVersion?: string };
    triedCredentials?: { credentials?: { name: string; namespace?: string }; credentialsVersion?: string };
  };
}

const get = (name: string): Bmh => JSON.parse(kubectl(['get', 'bmh', name, '-n', NS, '-o', 'json']).stdout) as Bmh;
const exists = (name: string): boolean => kubectl(['get', 'bmh', name, '-n', NS], { check: false }).status === 0;
const apply = (doc: Record<string, unknown>) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc) });
const secret = (name: string, data: Record<string, string>) => apply(secretDoc(name, data));
const host = (name: string, spec: Record<string, unknown>, annotations: Record<string, string> = {}) =>
  apply(hostDoc(name, spec, annotations));
const annotate = (name: string, ...kv: string[]) => kubectl(['annotate', 'bmh', name, '-n', NS, '--overwrite', ...kv]);
const waitState = (name: string, state: string, timeout = '120s') =>
  kubectl(['wait', '-n', NS, `--for=jsonpath={.status.provisioning.state}=${state}`, `bmh/${name}`, `--timeout=${timeout}`]);
const view = (name: string): Promise<HostView> =>
  suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery);
const ops = async (name: string): Promise<OperationKind[]> => (await view(name)).operations.map((o) => o.kind);
const events = (name: string): { reason: string; message: string; type: string }[] =>
  JSON.parse(kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']).stdout).items;

type ReadyState = 'available' | 'provisioned';
/** A fake-hardware host with its Secret, applied to be brought to `state`. */
function applyHost(name: string, state: ReadyState, over: Record<string, unknown>): void {
  secret(`${name}-bmc-secret`, { username: 'admin', password: 'x' });
  host(name, fakeHostSpec(name, state === 'provisioned' ? { image: IMAGE, ...over } : over));
}
/**
 * The hosts the tests take from a ready state, applied together before the first test (the file's beforeAll):
 * they come up side by side while the tests before theirs run, instead of each test waiting for its own.
 */
const early = new Map<string, { state: ReadyState; over: Record<string, unknown> }>();
function readyName(prefix: string, state: ReadyState, over: Record<string, unknown> = {}): string {
  const name = uniq(prefix);
  early.set(name, { state, over });
  return name;
}
const READY = {
  detach: readyName('detach', 'provisioned'),
  detachDel: readyName('detach-del', 'provisioned'),
  noOffKey: readyName('no-off-key', 'provisioned', { disablePowerOff: true }),
  detachDelay: readyName('detach-delay', 'available'),
  pivot: readyName('pivot', 'provisioned'),
  statusMoot: readyName('status-moot', 'available'),
  reinspect: readyName('reinspect', 'available'),
  noSpecInspect: readyName('nospecinspect', 'available', { inspectionMode: 'disabled' }),
};
beforeAll(() => {
  for (const [name, { state, over }] of early) applyHost(name, state, over);
});

/** A host of READY (applied before the tests) brought to its state. */
async function readyHost(name: string): Promise<Bmh> {
  const wanted = early.get(name);
  if (!wanted) throw new Error(`${name} is not one of the hosts applied before the tests`);
  // Up to 5 minutes: the hosts come up together, beside the whole suite's load.
  waitState(name, wanted.state, '300s');
  return get(name);
}

describe('invalid annotation values', () => {
  const cases: [string, Record<string, string>, RegExp][] = [
    ['status that is not JSON', { 'baremetalhost.metal3.io/status': '{oops' }, /^metadata\.annotations\["baremetalhost\.metal3\.io\/status"\]: is not valid JSON/],
    ['status with an unknown state', { 'baremetalhost.metal3.io/status': '{"operationalStatus":"OK","provisioning":{"state":"flying","ID":""}}' }, /status"\]\.provisioning\.state: must be one of/],
    ['inspect with an unknown value', { 'inspect.metal3.io': 'Disabled' }, /^metadata\.annotations\["inspect\.metal3\.io"\]: "Disabled" is not accepted/],
    ['hardwaredetails of the wrong type', { 'inspect.metal3.io': 'disabled', 'inspect.metal3.io/hardwaredetails': '{"ramMebibytes":"lots"}' }, /hardwaredetails"\]\.ramMebibytes: /],
    ['hardwaredetails while inspection is enabled', { 'inspect.metal3.io/hardwaredetails': '{"ramMebibytes":1}' }, /hardwaredetails"\]: is only used when inspection is disabled/],
  ];
  it.each(cases)('%s: an Event and a status error, nothing registered', async (_what, annotations, message) => {
    const name = uniq('bad-ann');
    secret(`${name}-bmc-secret`, { username: 'admin', password: 'x' });
    host(name, fakeHostSpec(name), annotations);
    const bmh = await waitFor('an error status', async () => {
      const b = get(name);
      return b.status?.operationalStatus === 'error' ? b : undefined;
    });
    expect(bmh.status!.errorMessage).toMatch(message);
    expect(bmh.status!.provisioning).toEqual({ state: 'registering', ID: '' });
    expect(bmh.status!.errorType).toBe('registration error');
    await waitFor('an InvalidAnnotation Event', async () => events(name).some((e) => e.reason === 'InvalidAnnotation' && e.type === 'Warning'));
    expect(await suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).describe().catch(() => undefined)).toBeUndefined();
  });

  it('a corrected value is acted on', async () => {
    const name = uniq('fixed-ann');
    secret(`${name}-bmc-secret`, { username: 'admin', password: 'x' });
    host(name, fakeHostSpec(name), { 'inspect.metal3.io': 'Disabled' });
    await waitFor('an error status', async () => get(name).status?.operationalStatus === 'error');
    annotate(name, 'inspect.metal3.io=disabled');
    waitState(name, 'available');
    expect(get(name).status!.operationalStatus).toBe('OK');
    expect(await ops(name)).not.toContain('inspect');
  });
});

describe('baremetalhost.metal3.io/detached', () => {
  it('detaches a provisioned host without deprovisioning or powering it off, and attaches it again without a redeploy', async () => {
    const name = READY.detach;
    const before = await readyHost(name);
    const oldNode = before.status!.provisioning.ID;
    expect(before.status!.poweredOn).toBe(true);

    annotate(name, 'baremetalhost.metal3.io/detached=');
    await waitFor('detached', async () => get(name).status?.operationalStatus === 'detached');
    const detached = get(name);
    expect(detached.status!.provisioning.state).toBe('provisioned');
    expect(detached.status!.poweredOn).toBe(true);
    expect(await ironic.getNode(oldNode)).toBeUndefined();
    const afterDetach = await ops(name);
    expect(afterDetach.slice(-1)).toEqual(['detach']);
    expect(afterDetach).not.toContain('deprovision');

    // While detached nothing is enforced: powering off in the spec does nothing.
    kubectl(['patch', 'bmh', name, '-n', NS, '--type=merge', '-p', '{"spec":{"online":false}}']);
    await waitFor('the spec reached the workflow', async () => (await view(name)).spec?.online === false);
    expect(await ops(name)).toEqual(afterDetach);
    expect(get(name).status!.operationalStatus).toBe('detached');

    kubectl(['annotate', 'bmh', name, '-n', NS, 'baremetalhost.metal3.io/detached-']);
    await waitFor('attached again and powered as the spec says', async () => {
      const b = get(name);
      return b.status?.operationalStatus === 'OK' && b.status.poweredOn === false;
    }, { timeoutMs: 120_000 });
    const attached = get(name);
    expect(attached.status!.provisioning.state).toBe('provisioned');
    const node = await ironic.getNode(attached.status!.provisioning.ID);
    expect(node?.provision_state).toBe('active');
    expect(node?.uuid).not.toBe(oldNode);
    // Adopted with the image it runs, not deployed again.
    expect(node?.instance_info.image_source).toBe(IMAGE.url);
    const after = (await ops(name)).slice(afterDetach.length);
    expect(after[0]).toBe('enroll');
    for (const never of ['provision', 'deprovision', 'inspect'] as const) expect(after).not.toContain(never);
    expect(events(name).map((e) => e.reason)).toEqual(expect.arrayContaining(['DetachSucceeded', 'Registered']));
  });

  it('waits for the running work before detaching a host that is not in a detachable state, and says why', async () => {
    const name = uniq('detach-wait');
    secret(`${name}-bmc-secret`, { username: 'admin', password: 'x' });
    // Detached from the start: it registers, inspects and prepares first, then detaches once available.
    host(name, fakeHostSpec(name), { 'baremetalhost.metal3.io/detached': '' });
    await waitFor('detached once available', async () => get(name).status?.operationalStatus === 'detached', { timeoutMs: 120_000 });
    expect(get(name).status!.provisioning.state).toBe('available');
    expect(await ops(name)).toEqual(['enroll', 'inspect', 'prepare', 'detach']);
    expect(events(name).some((e) => e.reason === 'DetachPending' && /detached once/.test(e.message))).toBe(true);
  });

  it('detaches with any value, as Metal3 does ("true": deleteAction delete, said in a Warning Event); deleting it skips power off and deprovisioning', async () => {
    const name = READY.detachDel;
    await readyHost(name);
    annotate(name, 'baremetalhost.metal3.io/detached=true');
    await waitFor('detached', async () => get(name).status?.operationalStatus === 'detached');
    const warning = await waitFor('the InvalidAnnotationValue Event', async () => events(name).find((e) => e.reason === 'InvalidAnnotationValue'));
    expect(warning).toMatchObject({ type: 'Warning' });
    expect(warning.message).toMatch(/^metadata\.annotations\["baremetalhost\.metal3\.io\/detached"\]: is not a JSON object: the host is detached with deleteAction "delete"/);
    const detachedOps = await ops(name);
    const handle = suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name }));
    kubectl(['delete', 'bmh', name, '-n', NS, '--timeout=90s']);
    expect(exists(name)).toBe(false);
    const final = (await handle.result()) as HostView;
    expect(final.operations.map((o) => o.kind).slice(detachedOps.length)).toEqual(['delete']);
  });

  it('a keyed reboot annotation on a disablePowerOff host reboots it once, as Metal3 does, with a Warning Event saying so', async () => {
    const name = READY.noOffKey;
    await readyHost(name);
    const before = (await ops(name)).filter((k) => k === 'reboot').length;
    annotate(name, 'reboot.metal3.io/capm3={"mode":"hard"}');
    const warning = await waitFor('the Warning Event', async () => events(name).find((e) => e.reason === 'InvalidAnnotationValue'));
    expect(warning).toMatchObject({ type: 'Warning' });
    expect(warning.message).toMatch(/reboot\.metal3\.io\/capm3\) read as one hard reboot, as Metal3 does: spec\.disablePowerOff is set/);
    await waitFor('rebooted once', async () => {
      const v = await view(name);
      return v.operations.filter((o) => o.kind === 'reboot' && o.outcome === 'succeeded').length === before + 1 && !v.currentOperation;
    }, { timeoutMs: 120_000 });
    const bmh = get(name);
    expect(bmh.status).toMatchObject({ operationalStatus: 'OK', poweredOn: true, provisioning: { state: 'provisioned' } });
    expect(events(name).map((e) => e.reason)).not.toContain('InvalidAnnotation');
    // The controller hands the key over again on every reconcile: still one reboot.
    annotate(name, 'touch=1');
    await waitFor('the touch seen', async () => (await view(name)).power.holds.capm3 === 'hard');
    expect((await ops(name)).filter((k) => k === 'reboot')).toHaveLength(before + 1);
  });

  it('deleteAction delay holds the delete until the annotation is removed, then deletes as usual', async () => {
    const name = READY.detachDelay;
    await readyHost(name);
    annotate(name, 'baremetalhost.metal3.io/detached={"deleteAction":"delay"}');
    await waitFor('detached', async () => get(name).status?.operationalStatus === 'detached');
    kubectl(['delete', 'bmh', name, '-n', NS, '--wait=false']);
    await waitFor('the workflow has the delete request', async () => (await view(name)).deleteRequested);
    // Held: still there, nothing run since the detach.
    expect(exists(name)).toBe(true);
    expect((await ops(name)).slice(-1)).toEqual(['detach']);
    kubectl(['annotate', 'bmh', name, '-n', NS, 'baremetalhost.metal3.io/detached-']);
    await waitFor('deleted', async () => !exists(name), { timeoutMs: 120_000 });
    const final = (await suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).result()) as HostView;
    const tail = final.operations.map((o) => o.kind);
    expect(tail.slice(tail.lastIndexOf('detach') + 1)).toEqual(['enroll', 'power', 'delete']);
  });
});

describe('baremetalhost.metal3.io/status', () => {
  it('moves a provisioned host to a "new cluster": detach, delete, re-create with the status — provisioned again, no inspection, no deploy', async () => {
    const name = READY.pivot;
    const old = await readyHost(name);
    const oldNode = old.status!.provisioning.ID;
    // As Metal3's docs describe the move: detach, then delete without deprovisioning.
    annotate(name, 'baremetalhost.metal3.io/detached=');
    await waitFor('detached', async () => get(name).status?.operationalStatus === 'detached');
    const saved = get(name).status!;
    kubectl(['delete', 'bmh', name, '-n', NS, '--timeout=90s']);
    expect(await ironic.getNode(oldNode)).toBeUndefined();

    // The "new cluster": the same manifest with the status in the annotation, as `kubectl annotate --dry-run` produces it.
    const { operationalStatus: _detached, ...rest } = saved;
    const status = { ...rest, operationalStatus: 'OK' };
    host(name, { ...old.spec }, { 'baremetalhost.metal3.io/status': JSON.stringify(status) });
    await waitFor('the annotation consumed', async () => {
      const b = get(name);
      return b.metadata.annotations?.['baremetalhost.metal3.io/status'] === undefined && b.status?.provisioning.state === 'provisioned' ? b : undefined;
    });
    await waitFor('registered again', async () => {
      const enrolled = (await view(name)).operations.some((o) => o.kind === 'enroll' && o.outcome === 'succeeded');
      return enrolled && get(name).status?.provisioning.ID !== '';
    }, { timeoutMs: 120_000 });
    const restored = get(name);
    expect(restored.status!.provisioning.state).toBe('provisioned');
    expect(restored.status!.provisioning.image?.url).toBe(IMAGE.url);
    expect(restored.status!.hardware).toEqual(saved.hardware);
    expect(restored.status!.operationHistory.provision).toEqual(saved.operationHistory.provision);
    const node = await ironic.getNode(restored.status!.provisioning.ID);
    expect(node?.provision_state).toBe('active');
    expect(node?.instance_info.image_source).toBe(IMAGE.url);
    const kinds = await ops(name);
    expect(kinds).not.toContain('inspect');
    expect(kinds).not.toContain('provision');
    expect(kinds[0]).toBe('enroll');
    expect(events(name).some((e) => e.reason === 'StatusRestored')).toBe(true);
  });

  it('is only removed from a host that already has a status', async () => {
    const name = READY.statusMoot;
    const before = await readyHost(name);
    const fake = { ...before.status!, provisioning: { state: 'provisioned', ID: 'elsewhere' } };
    annotate(name, `baremetalhost.metal3.io/status=${JSON.stringify(fake)}`);
    await waitFor('the annotation removed', async () => get(name).metadata.annotations?.['baremetalhost.metal3.io/status'] === undefined);
    expect(get(name).status!.provisioning.state).toBe('available');
    expect(get(name).status!.provisioning.ID).toBe(before.status!.provisioning.ID);
  });
});

describe('inspect.metal3.io and inspection modes', () => {
  it('an empty value re-inspects an available host once and is removed', async () => {
    const name = READY.reinspect;
    const before = await readyHost(name);
    expect((await ops(name)).filter((o) => o === 'inspect')).toHaveLength(1);
    annotate(name, 'inspect.metal3.io=');
    await waitFor('inspected again and available', async () => {
      const v = await view(name);
      return v.operations.filter((o) => o.kind === 'inspect').length === 2 && v.status.provisioning.state === 'available' && v.currentOperation === undefined;
    }, { timeoutMs: 120_000 });
    await waitFor('available in Kubernetes', async () => get(name).status?.provisioning.state === 'available');
    const after = get(name);
    expect(after.metadata.annotations?.['inspect.metal3.io']).toBeUndefined();
    expect(after.status!.operationHistory.inspect!.start! > before.status!.operationHistory.inspect!.start!).toBe(true);
    expect((await ops(name)).filter((o) => o === 'inspect')).toHaveLength(2);
  });

  it('disabled with hardwaredetails: no inspection, the details become status.hardware and HardwareData', async () => {
    const name = uniq('extinspect');
    secret(`${name}-bmc-secret`, { username: 'admin', password: 'x' });
    host(name, fakeHostSpec(name), { 'inspect.metal3.io': 'disabled', 'inspect.metal3.io/hardwaredetails': GUIDE_HARDWARE });
    waitState(name, 'available');
    const expected = JSON.parse(GUIDE_HARDWARE);
    // Deep equality: the API server writes object keys in its own order.
    await waitFor('hardware from the annotation', async () => isDeepStrictEqual(get(name).status?.hardware, expected));
    const hd = JSON.parse(kubectl(['get', 'hardwaredata', name, '-n', NS, '-o', 'json']).stdout);
    expect(hd.spec.hardware).toEqual(expected);
    expect((await ops(name)).slice(0, 2)).toEqual(['enroll', 'prepare']);
    expect(await ops(name)).not.toContain('inspect');
    // Consumed as Metal3 does; the data stays.
    await waitFor('hardwaredetails annotation removed', async () => get(name).metadata.annotations?.['inspect.metal3.io/hardwaredetails'] === undefined);
    expect(get(name).status!.hardware).toEqual(expected);
  });

  it('spec.inspectionMode: disabled skips inspection too', async () => {
    const name = READY.noSpecInspect;
    await readyHost(name);
    expect((await ops(name)).slice(0, 2)).toEqual(['enroll', 'prepare']);
    expect(await ops(name)).not.toContain('inspect');
  });
});

describe('hosts without a BMC', () => {
  it('apply, stay unmanaged with nothing in Ironic, and register once a BMC is given', async () => {
    const name = uniq('nobmc');
    host(name, { online: true, image: { url: 'http://1.2.3.4/image.iso', format: 'live-iso' } });
    waitState(name, 'unmanaged');
    expect(await ironic.getNode(`${NS}~${name}`)).toBeUndefined();
    expect(await ops(name)).toEqual([]);
    secret(`${name}-bmc-secret`, { username: 'admin', password: 'x' });
    kubectl(['patch', 'bmh', name, '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { image: null, bootMACAddress: randomMac(), bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` } } })]);
    waitState(name, 'available');
  });
});

describe('credentials Secrets', () => {
  it('re-validates a changed Secret: a wrong password is a registration error naming the Secret, the fix is recorded in goodCredentials', async () => {
    const name = uniq('creds');
    const secretName = `${name}-bmc-secret`;
    const wrong = `wrong-${randomBytes(6).toString('hex')}`;
    secret(secretName, { username: 'admin', password: 'password' });
    host(name, {
      online: false,
      automatedCleaningMode: 'disabled',
      bmc: { address: `redfish+${SUSHY_URL}/redfish/v1/Systems/6d660000-0000-4000-8000-000000000001`, credentialsName: secretName },
    }, { 'inspect.metal3.io': 'disabled' });
    waitState(name, 'available', '180s');
    const version = () => kubectl(['get', 'secret', secretName, '-n', NS, '-o', 'jsonpath={.metadata.resourceVersion}']).stdout;
    const ref = { name: secretName, namespace: NS };
    const v1 = version();
    await waitFor('goodCredentials', async () => get(name).status?.goodCredentials?.credentialsVersion === v1);
    expect(get(name).status!.goodCredentials).toEqual({ credentials: ref, credentialsVersion: v1 });

    secret(secretName, { username: 'admin', password: wrong });
    const v2 = version();
    const failed = await waitFor('a registration error', async () => {
      const b = get(name);
      return b.status?.errorType === 'registration error' ? b : undefined;
    }, { timeoutMs: 120_000 });
    expect(failed.status!.errorMessage).toContain(`Secret ${NS}/${secretName}`);
    expect(failed.status!.errorMessage).not.toContain(wrong);
    expect(failed.status!.triedCredentials).toEqual({ credentials: ref, credentialsVersion: v2 });
    expect(failed.status!.goodCredentials).toEqual({ credentials: ref, credentialsVersion: v1 });

    secret(secretName, { username: 'admin', password: 'password' });
    const v3 = version();
    const fixed = await waitFor('the fix validated', async () => {
      const b = get(name);
      return b.status?.goodCredentials?.credentialsVersion === v3 && b.status.operationalStatus === 'OK' ? b : undefined;
    }, { timeoutMs: 120_000 });
    expect(fixed.status!.triedCredentials).toEqual({ credentials: ref, credentialsVersion: v3 });
    expect(fixed.status!.errorType ?? '').toBe('');
    expect(fixed.status!.provisioning.state).toBe('available');

    // Only names and versions entered the history (the host's and its operations'), never a password.
    // The host's runs and every operation child they started, payloads decoded.
    const texts = await decodedHistoryTexts(suite.client, hostWorkflowId({ namespace: NS, name }));
    expect(texts.some((t) => t.text.includes(`"version":"${v3}"`))).toBe(true);
    expect(findSecrets(texts, [wrong])).toEqual([]);
  });
});
