/**
 * The Kubernetes shim end to end: a real kube-apiserver (scripts/kube.sh), the
 * controller as its own process, a worker in Kubernetes mode, and the real
 * Temporal and Ironic of the test stack.
 */
import { decodedHistoryTexts, findSecrets } from '../../bench/support/history-secrets';
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import { IRONIC_URL, SUSHY_URL } from '../support/env';
import { uniq, waitFor } from '../support/harness';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-ctl');
const taskQueue = uniq('tq-k8s');
const suite = useShimSuite(NS, taskQueue);
const ironic = new IronicClient({ url: IRONIC_URL });
const PASSWORD = `pw-${randomBytes(6).toString('hex')}`;

const json = (args: string[]) => JSON.parse(kubectl([...args, '-n', NS, '-o', 'json']).stdout);
const state = (name: string): string | undefined => {
  const r = kubectl(['get', 'bmh', name, '-n', NS, '-o', 'jsonpath={.status.provisioning.state}'], { check: false });
  return r.status === 0 ? r.stdout : undefined;
};
const apply = (doc: Record<string, unknown>, check = true) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc), check });

/**
 * The hosts later tests start from once they are available or provisioned, applied before the first test: they
 * come up while the tests before theirs run, instead of each test waiting for its own.
 */
const EARLY: Record<string, { spec: Record<string, unknown>; password: string }> = {
  'host-del-once': {
    spec: { ...fakeHostSpec('host-del-once'), image: { url: 'http://127.0.0.1/images/once.qcow2', checksum: 'b'.repeat(64), checksumType: 'sha256', format: 'qcow2' } },
    password: PASSWORD,
  },
  'host-paused': { spec: fakeHostSpec('host-paused'), password: PASSWORD },
  'host-crash': { spec: fakeHostSpec('host-crash'), password: 'x' },
  'host-reboot': { spec: fakeHostSpec('host-reboot'), password: 'x' },
};
beforeAll(() => {
  for (const [name, { spec, password }] of Object.entries(EARLY)) {
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password }));
    apply(hostDoc(name, spec));
  }
});

describe('the Kubernetes shim', () => {
  it('takes a Metal3 host from apply to available, provisioned, back to available, and deletes it', async () => {
    const name = 'host-0';
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: PASSWORD }));
    apply(secretDoc(`${name}-user-data`, { userData: '#cloud-config\nhostname: host-0\n' }));
    apply(hostDoc(name, fakeHostSpec(name)));

    const waited = kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=90s']);
    expect(waited.stdout).toMatch(/condition met/);
    const bmh = json(['get', 'bmh', name]);
    expect(bmh.metadata.finalizers).toContain('baremetalhost.metal3.io');
    expect(bmh.status.operationalStatus).toBe('OK');
    expect(bmh.status.provisioning.ID).toMatch(/^[0-9a-f-]{36}$/);
    expect(bmh.status.operationHistory.register.end).toBeTruthy();

    kubectl(['patch', 'bmh', name, '-n', NS, '--type=merge', '-p', JSON.stringify({
      spec: {
        image: { url: 'http://127.0.0.1/images/ubuntu.qcow2', checksum: 'a'.repeat(64), checksumType: 'sha256', format: 'qcow2' },
        userData: { name: `${name}-user-data`, namespace: NS },
      },
    })]);
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=provisioned', `bmh/${name}`, '--timeout=90s']);
    const provisioned = json(['get', 'bmh', name]);
    expect(provisioned.status.provisioning.image.url).toBe('http://127.0.0.1/images/ubuntu.qcow2');
    expect((await ironic.getNode(provisioned.status.provisioning.ID))?.provision_state).toBe('active');

    const printed = kubectl(['get', 'bmh', name, '-n', NS]).stdout;
    expect(printed).toMatch(/STATE\s+CONSUMER\s+ONLINE\s+ERROR\s+AGE/);
    expect(printed).toMatch(/host-0\s+provisioned\s+true/);

    kubectl(['patch', 'bmh', name, '-n', NS, '--type=json', '-p', '[{"op":"remove","path":"/spec/image"}]']);
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=90s']);
    expect(json(['get', 'bmh', name]).status.provisioning.image).toBeUndefined();

    // BMO's reasons where BMO has the Event (clients/kubernetes/bmo-events.ts), metalflow's StateChanged where it has
    // none (the first registration). A status write's Events follow the write: the last one is awaited.
    const wanted = ['StateChanged', 'Registered', 'ProvisioningComplete', 'DeprovisioningStarted', 'DeprovisioningComplete'];
    const reasonsNow = (): string[] =>
      JSON.parse(kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']).stdout).items.map((e: { reason: string }) => e.reason);
    const reasons = await waitFor('the deprovision\'s Events', async () => {
      const now = reasonsNow();
      return wanted.every((r) => now.includes(r)) ? now : undefined;
    }, { timeoutMs: 30_000 }).catch(() => reasonsNow());
    expect(reasons).toEqual(expect.arrayContaining(wanted));

    const nodeId = provisioned.status.provisioning.ID;
    kubectl(['delete', 'bmh', name, '-n', NS, '--timeout=90s']);
    expect(kubectl(['get', 'bmh', name, '-n', NS], { check: false }).status).not.toBe(0);
    expect(await ironic.getNode(nodeId)).toBeUndefined();

    // The password was read from the Secret at the moment of use, never carried in history.
    const texts = await decodedHistoryTexts(suite.client, hostWorkflowId({ namespace: NS, name }));
    expect(texts.some((t) => t.text.includes(`"name":"${name}"`))).toBe(true);
    expect(findSecrets(texts, [PASSWORD])).toEqual([]);
  });

  it('asks the workflow to delete once, however long the delete runs', async () => {
    const name = 'host-del-once';
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=provisioned', `bmh/${name}`, '--timeout=300s']);
    // Deprovisioning (with cleaning), power off and removal take several of the controller's 1 s requeues.
    kubectl(['delete', 'bmh', name, '-n', NS, '--timeout=120s']);
    const history = await suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).fetchHistory();
    const kinds = (history.events ?? []).map((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name);
    expect(kinds.filter((k) => k === 'deleteHost')).toHaveLength(1);
    // The object's spec never changed after its create: it came with the first directives, in the one update that
    // started the workflow (the count reads real update events).
    expect(kinds.find((k) => k !== undefined)).toBe('applyDirectives');
    expect(kinds).not.toContain('applySpec');
  });

  it('hands the paused annotation to the workflow: a delete is held while paused and runs once the annotation goes', async () => {
    const name = 'host-paused';
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=120s']);
    const handle = suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name }));
    kubectl(['annotate', 'bmh', name, '-n', NS, 'baremetalhost.metal3.io/paused=metal3.io/capm3']);
    await waitFor('the workflow paused', async () => (await handle.query(hostViewQuery)).paused?.reason === 'metal3.io/capm3');
    kubectl(['delete', 'bmh', name, '-n', NS, '--wait=false']);
    await waitFor('the delete handed over', async () => (await handle.query(hostViewQuery)).deleteRequested);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    expect(state(name)).toBe('available');
    kubectl(['annotate', 'bmh', name, '-n', NS, 'baremetalhost.metal3.io/paused-']);
    kubectl(['wait', '-n', NS, '--for=delete', `bmh/${name}`, '--timeout=120s']);
    expect((await handle.describe()).status.name).toBe('COMPLETED');
  });

  it("refuses at admission what Metal3's webhook refuses (unknown BMC scheme, malformed MAC)", () => {
    const name = 'host-refused';
    const scheme = apply(hostDoc(name, { ...fakeHostSpec(name), bmc: { address: 'telnet://10.0.0.1', credentialsName: `${name}-bmc-secret` } }), false);
    expect(scheme.status).not.toBe(0);
    // The scheme given is named, as the controller's own check names it.
    expect(scheme.stderr).toMatch(/spec\.bmc\.address: Invalid value: .*unknown BMC scheme "telnet"; accepted schemes: ipmi, libvirt, redfish/);
    const mac = apply(hostDoc(name, { ...fakeHostSpec(name), bootMACAddress: '52:54:00:12:34' }), false);
    expect(mac.status).not.toBe(0);
    expect(mac.stderr).toMatch(/spec\.bootMACAddress: Invalid value: .*six two-digit hex octets/);
    expect(kubectl(['get', 'bmh', name, '-n', NS], { check: false }).status).not.toBe(0);
  });

  it('reports an invalid spec on the object (registering, registration error in kubectl get bmh) and starts nothing', async () => {
    const name = 'host-bad';
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'x' }));
    // Past admission, refused by the controller: a Redfish address naming the Systems collection, not one system.
    apply(hostDoc(name, { ...fakeHostSpec(name), bmc: { address: 'redfish://127.0.0.1/redfish/v1/Systems', credentialsName: `${name}-bmc-secret` } }));
    await waitFor('an error status', async () => json(['get', 'bmh', name]).status?.operationalStatus === 'error', { timeoutMs: 30_000 });
    const bmh = json(['get', 'bmh', name]);
    expect(bmh.status.errorMessage).toMatch(/^spec\.bmc\.address: /);
    // Nothing was registered: the status says what is wrong, in Metal3's terms.
    expect(bmh.status.provisioning).toEqual({ state: 'registering', ID: '' });
    expect(bmh.status.errorType).toBe('registration error');
    // Counted as BMO counts a failure it records.
    expect(bmh.status.errorCount).toBe(1);
    expect(kubectl(['get', 'bmh', name, '-n', NS]).stdout.split('\n')[1]).toMatch(/^host-bad\s+registering\s+true\s+registration error\s/);
    const described = kubectl(['describe', 'bmh', name, '-n', NS]).stdout;
    expect(described).toMatch(/InvalidSpec/);
    // No workflow was started for it.
    const d = await suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).describe().catch(() => undefined);
    expect(d).toBeUndefined();
  });

  it('reports a missing credentials Secret as a registration error naming the Secret', async () => {
    const name = 'host-nosecret';
    apply(hostDoc(name, fakeHostSpec(name)));
    await waitFor('a registration error', async () => json(['get', 'bmh', name]).status?.errorType === 'registration error', { timeoutMs: 60_000 });
    expect(json(['get', 'bmh', name]).status.errorMessage).toBe(`Secret ${NS}/${name}-bmc-secret not found`);
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'x' }));
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=90s']);
  });

  it("refuses a BMC address change at admission once the host is past registering, as Metal3's webhook", () => {
    // Available since the test before.
    const name = 'host-nosecret';
    const moved = kubectl(['patch', 'bmh', name, '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { bmc: { address: `fake://${name}-moved` } } })], { check: false });
    expect(moved.status).not.toBe(0);
    expect(moved.stderr).toMatch(/spec\.bmc\.address: .*spec\.bmc\.address cannot change while the host is available \(as in Metal3, only while it is registering or detached\)/);
    expect(json(['get', 'bmh', name]).spec.bmc.address).toBe(`fake://${name}`);
  });

  it('deletes a host still registering straight away, as BMO: no power off of a BMC that never answered', async () => {
    const name = 'host-reg-delete';
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: PASSWORD }));
    // A BMC nothing answers on: the host stays registering, with a registration error.
    apply(hostDoc(name, { ...fakeHostSpec(name), bmc: { address: 'redfish+http://127.0.0.1:9/redfish/v1/Systems/1', credentialsName: `${name}-bmc-secret` } }));
    await waitFor('a registration error', async () => json(['get', 'bmh', name]).status?.errorType === 'registration error', { timeoutMs: 60_000 });
    expect(state(name)).toBe('registering');
    const handle = suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name }));
    const before = (await handle.query(hostViewQuery)).operations.length;
    kubectl(['delete', 'bmh', name, '-n', NS, '--timeout=60s']);
    const final = (await handle.result()) as HostView;
    // Straight to deleting (a registration retry may end first): no power-off step, nothing given up.
    const after = final.operations.slice(before);
    expect(after.filter((o) => o.kind === 'power')).toEqual([]);
    expect(after.at(-1)).toMatchObject({ kind: 'delete', outcome: 'succeeded', state: 'deleting' });
    const events = JSON.parse(kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']).stdout).items as { reason: string; message: string }[];
    expect(events.filter((e) => ['PowerOff', 'PowerOffSkipped', 'DeprovisioningSkipped'].includes(e.reason) || /powering off before delete/.test(e.message))).toEqual([]);
    expect(await ironic.getNode(`${NS}~${name}`)).toBeUndefined();
  });

  it('survives the controller being killed during provisioning: one workflow, nothing lost', async () => {
    const name = 'host-crash';
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=90s']);
    const controller = suite.shim.running('controller');
    kubectl(['patch', 'bmh', name, '-n', NS, '--type=merge', '-p', JSON.stringify({
      spec: { image: { url: 'http://127.0.0.1/images/a.qcow2', checksum: 'b'.repeat(64), checksumType: 'sha256', format: 'qcow2' } },
    })]);
    controller!.kill('SIGKILL');
    // A change made while no controller runs must be picked up by the next one's list.
    kubectl(['annotate', 'bmh', name, '-n', NS, 'example.com/touched=yes']);
    kubectl(['patch', 'bmh', name, '-n', NS, '--type=merge', '-p', '{"spec":{"online":false}}']);
    suite.shim.startController();
    // The killed controller may or may not have handed the image over: provisioned if it did; if not,
    // available, as BMO holds a host with an image while spec.online is false. Off either way.
    await waitFor('powered off as the spec now says', async () => {
      const status = json(['get', 'bmh', name]).status;
      return status.poweredOn === false && ['available', 'provisioned'].includes(status.provisioning.state);
    }, { timeoutMs: 120_000 });
    kubectl(['patch', 'bmh', name, '-n', NS, '--type=merge', '-p', '{"spec":{"online":true}}']);
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=provisioned', `bmh/${name}`, '--timeout=120s']);
    await waitFor('powered on again', async () => json(['get', 'bmh', name]).status.poweredOn === true, { timeoutMs: 60_000 });
    const runs: string[] = [];
    for await (const wf of suite.client.workflow.list({ query: `WorkflowId = '${hostWorkflowId({ namespace: NS, name })}'` })) runs.push(wf.runId);
    expect(runs).toHaveLength(1);
  });

  it('acts on Metal3 reboot annotations: one-shot reboot removed when done, keyed power off held until removed, a value that does not parse read as soft with a warning', async () => {
    const name = 'host-reboot';
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=90s']);
    await waitFor('powered on', async () => json(['get', 'bmh', name]).status.poweredOn === true, { timeoutMs: 60_000 });
    const handle = suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name }));
    const reboots = async () =>
      (await handle.query(hostViewQuery)).operations.filter((o) => o.kind === 'reboot' && o.outcome === 'succeeded').length;

    // One-shot: rebooted once, then the controller removes the annotation (as Metal3 does).
    kubectl(['annotate', 'bmh', name, '-n', NS, 'reboot.metal3.io={"mode":"hard"}']);
    await waitFor('the annotation removed after the reboot', async () => {
      const annotations = json(['get', 'bmh', name]).metadata.annotations ?? {};
      return !('reboot.metal3.io' in annotations);
    }, { timeoutMs: 60_000 });
    expect(await reboots()).toBe(1);
    const nodeId = json(['get', 'bmh', name]).status.provisioning.ID;
    expect((await ironic.getNode(nodeId))?.power_state).toBe('power on');

    // Keyed: off until every key is gone.
    kubectl(['annotate', 'bmh', name, '-n', NS, 'reboot.metal3.io/remediation=', 'reboot.metal3.io/upgrade={"mode":"soft"}']);
    await waitFor('held off', async () => json(['get', 'bmh', name]).status.poweredOn === false, { timeoutMs: 60_000 });
    expect((await ironic.getNode(nodeId))?.power_state).toBe('power off');
    kubectl(['annotate', 'bmh', name, '-n', NS, 'reboot.metal3.io/remediation-']);
    expect((await handle.query(hostViewQuery)).status.poweredOn).toBe(false);
    kubectl(['annotate', 'bmh', name, '-n', NS, 'reboot.metal3.io/upgrade-']);
    await waitFor('on again', async () => json(['get', 'bmh', name]).status.poweredOn === true, { timeoutMs: 60_000 });
    expect(await reboots()).toBe(1);

    // A value that does not parse: a soft reboot, as Metal3 reads it, served once, and a Warning Event saying so.
    kubectl(['annotate', 'bmh', name, '-n', NS, 'reboot.metal3.io={mode: hard}']);
    await waitFor('the annotation removed after the reboot', async () => {
      const annotations = json(['get', 'bmh', name]).metadata.annotations ?? {};
      return !('reboot.metal3.io' in annotations);
    }, { timeoutMs: 60_000 });
    expect(await reboots()).toBe(2);
    expect(json(['get', 'bmh', name]).status.operationalStatus).toBe('OK');
    const events = JSON.parse(kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']).stdout);
    const warning = events.items.find((e: { reason: string }) => e.reason === 'InvalidAnnotationValue');
    expect(warning).toMatchObject({ type: 'Warning' });
    expect(warning.message).toMatch(/^metadata\.annotations\["reboot\.metal3\.io"\]: is not valid JSON .*read as a soft reboot, as Metal3 reads it/);
  });

  it('inspects a Redfish host out of band with inspectionMode fast, filling status.hardware and HardwareData', async () => {
    const name = 'host-fast';
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'password' }));
    apply(hostDoc(name, {
      online: false,
      inspectionMode: 'fast',
      automatedCleaningMode: 'disabled',
      bmc: { address: `redfish+${SUSHY_URL}/redfish/v1/Systems/6d660000-0000-4000-8000-000000000002`, credentialsName: `${name}-bmc-secret` },
    }));
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=120s']);
    const bmh = json(['get', 'bmh', name]);
    expect(bmh.status.hardware.cpu.count).toBeGreaterThan(0);
    const hw = json(['get', 'hardwaredata', name]);
    expect(hw.spec.hardware.cpu.count).toBe(bmh.status.hardware.cpu.count);
    expect(hw.spec.hardware.ramMebibytes).toBeGreaterThan(0);
    // An IPMI BMC cannot be inspected that way: a clear error on the field.
    apply(hostDoc('host-fast-ipmi', { online: true, inspectionMode: 'fast', bmc: { address: 'ipmi://127.0.0.1:22699', credentialsName: 'x' } }));
    await waitFor('an error status', async () => json(['get', 'bmh', 'host-fast-ipmi']).status?.operationalStatus === 'error', { timeoutMs: 30_000 });
    expect(json(['get', 'bmh', 'host-fast-ipmi']).status.errorMessage).toMatch(/^spec\.inspectionMode: fast \(out-of-band\) inspection/);
  });

  it('gives a reconcile slot back when a host\'s workflow does not answer, and retries that host later', async () => {
    // One slot and a 3 s deadline: without the deadline the stuck host would hold the only slot for good.
    suite.shim.running('controller')!.kill('SIGKILL');
    const controller = suite.shim.startController({ METALFLOW_CONTROLLER_CONCURRENCY: '1', METALFLOW_CONTROLLER_RECONCILE_TIMEOUT_SECONDS: '3' });
    const stuck = 'host-stuck';
    const other = 'host-other';
    const ref = { namespace: NS, name: stuck };
    // Its workflow waits on a task queue no worker polls, so no update to it is ever answered.
    const unserved = await suite.client.workflow.start('hostWorkflow', {
      workflowId: hostWorkflowId(ref),
      taskQueue: uniq('tq-nobody'),
      args: [{ ref, options: { publishStatus: true } }],
    });
    apply(secretDoc(`${stuck}-bmc-secret`, { username: 'admin', password: 'x' }));
    apply(hostDoc(stuck, fakeHostSpec(stuck)));
    await waitFor('the stuck host\'s reconcile to fail', async () => suite.shim.output(controller).includes(`${NS}/${stuck}: reconcile failed`), { timeoutMs: 60_000 });
    expect(suite.shim.output(controller)).toContain(`no answer from Temporal within 3 s: is a worker polling task queue "${taskQueue}"?`);

    apply(secretDoc(`${other}-bmc-secret`, { username: 'admin', password: 'x' }));
    apply(hostDoc(other, fakeHostSpec(other)));
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${other}`, '--timeout=120s']);
    expect(state(stuck)).toBe('');

    // Once its workflow can run again, the retries bring the stuck host along too.
    await unserved.terminate('test: the run no worker serves');
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${stuck}`, '--timeout=150s']);
  });
});
