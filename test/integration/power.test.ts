/**
 * Power in steady states, reboots and keyed power-off requests, and fast
 * inspection, through the host workflow on the real Temporal server:
 * - Ironic-managed hosts (fake-hardware) with the worker's Ironic traffic
 *   going through the recording proxy, so the power targets Ironic received
 *   and their order can be checked;
 * - a host whose power belongs to its BMC (ipmi_sim), with nothing sent to Ironic;
 * - fast out-of-band inspection from sushy-tools' Redfish.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../api/host-service';
import { IronicClient } from '../../clients/ironic/client';
import { POWER_FIELDS } from '../../clients/ironic/types';
import { emptyStatus, type HostSpec } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { registrationFingerprint } from '../../workflows/host/decide';
import { DEFAULT_HOST_OPTIONS, hostViewQuery, powerRequestsUpdate, type HostState, type HostView } from '../../contracts/host';
import type { hostWorkflow } from '../../workflows/host/host';
import type { IronicProxy, RecordedRequest } from '../../bench/support/ironic-proxy';
import { useProxiedHarness } from '../support/proxied-harness';
import { FAST_HOST_OPTIONS, randomMac, uniq, waitFor, type Harness } from '../support/harness';
import { IRONIC_URL, SUSHY_URL } from '../support/env';
import { IPMI_PASSWORD, IPMI_USER, startIpmiSim, type IpmiSim } from '../bmc/support/ipmi-sim';

const NS = 'power';
const OPTIONS = { ...FAST_HOST_OPTIONS, powerCheckSeconds: 2, softPowerOffSeconds: 5 };
const suite = useProxiedHarness({ hostOptions: OPTIONS });
let h: Harness;
let proxy: IronicProxy;
/** The test's own view of Ironic, around the proxy (only the worker's requests are recorded). */
const ironic = new IronicClient({ url: IRONIC_URL });

beforeAll(() => {
  ({ h, proxy } = suite);
});

const view = (name: string): Promise<HostView> => h.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery);
const until = <T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 60_000) => waitFor(what, probe, { timeoutMs });

/** Power targets the worker sent to Ironic for this node, in order. */
const powerTargets = (nodeId: string, from = 0): string[] =>
  proxy.requests
    .slice(from)
    .filter((r: RecordedRequest) => r.method === 'PUT' && r.path === `/v1/nodes/${nodeId}/states/power`)
    .map((r) => (JSON.parse(r.body) as { target: string }).target);

async function provisionedFakeHost(over: Partial<HostSpec> = {}): Promise<{ name: string; ref: { namespace: string; name: string }; nodeId: string }> {
  const name = uniq('pw');
  const ref = { namespace: NS, name };
  const spec: HostSpec = {
    bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` },
    bootMACAddress: randomMac(),
    online: true,
    image: { url: 'http://127.0.0.1/img.qcow2', checksum: 'd'.repeat(64), format: 'qcow2' },
    ...over,
  };
  await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
  const v = await until('provisioned and on', async () => {
    const x = await view(name);
    return x.status.provisioning.state === 'provisioned' && x.status.poweredOn && !x.currentOperation ? x : undefined;
    // Generous: the full suite runs this beside the 200-host Kubernetes test on 2 cores.
  }, 240_000);
  return { name, ref, nodeId: v.status.provisioning.ID };
}

const ironicPower = async (nodeId: string) => (await ironic.getNode(nodeId))?.power_state;

/**
 * One provisioned host for the tests below that leave it provisioned, on and idle with no power-off key
 * (each test's requests are counted from its own mark): a provision each would cost Ironic far more than
 * what the tests drive. Provisioned by whichever of them runs first.
 */
let shared: ReturnType<typeof provisionedFakeHost> | undefined;
const sharedHost = (): ReturnType<typeof provisionedFakeHost> =>
  (shared ??= provisionedFakeHost().catch((err: unknown) => {
    shared = undefined;
    throw err;
  }));

describe('an Ironic-managed host (fake-hardware)', { timeout: 360_000 }, () => {
  it('notices a power off behind its back, records it, and powers on again through Ironic', async () => {
    const { name, nodeId } = await sharedHost();
    const earlier = (await view(name)).power.lastMismatch?.at;
    const mark = proxy.requests.length;
    // Someone with Ironic access powers the node off; the workflow is not told.
    await ironic.setPowerState(nodeId, 'power off');
    const fixed = await until('mismatch recorded and corrected', async () => {
      const v = await view(name);
      return v.power.lastMismatch && v.power.lastMismatch.at !== earlier && v.status.poweredOn && (await ironicPower(nodeId)) === 'power on' ? v : undefined;
    });
    expect(fixed.power.lastMismatch).toMatchObject({ observedOn: false, recordedOn: true });
    expect(fixed.operations.at(-1)).toMatchObject({ kind: 'power', outcome: 'succeeded', state: 'provisioned' });
    // Our own read went to Ironic (GET), and the correction was one power-on request.
    expect(powerTargets(nodeId, mark)).toEqual(['power on']);
  });

  it('an idle check adds only its timer, its workflow task and one local-activity marker to the history', async () => {
    const { ref } = await sharedHost();
    const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
    /** Each event named by its attributes field, e.g. timerFiredEventAttributes → timerFired. */
    const kinds = async (): Promise<string[]> =>
      ((await handle.fetchHistory()).events ?? []).map((e) => {
        const key = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k]);
        return key ? key.replace(/EventAttributes$/, '') : '?';
      });
    const fired = (k: string[]) => k.filter((x) => x === 'timerFired').length;
    const before = fired(await kinds());
    const k = await until('three idle checks', async () => {
      const all = await kinds();
      return fired(all) >= before + 3 ? all : undefined;
    });
    // Between two idle checks: exactly what one check costs, no child workflow, no activity task. The check's
    // local activity comes first and the next period's timer after it (idle-wait.ts).
    const last = k.lastIndexOf('timerFired');
    const previous = k.lastIndexOf('timerFired', last - 1);
    expect(k.slice(previous, last)).toEqual([
      'timerFired',
      'workflowTaskScheduled',
      'workflowTaskStarted',
      'workflowTaskCompleted',
      'markerRecorded',
      'timerStarted',
    ]);
  });

  it('reboots once through Ironic as off then on: soft off first; hard when asked; hard when the driver refuses soft', async () => {
    const { name, ref, nodeId } = await sharedHost();
    const rebooted = (v: HostView) => v.operations.filter((o) => o.kind === 'reboot' && o.outcome === 'succeeded').length;
    const earlier = rebooted(await view(name));
    const reboots = async (n: number) =>
      until(`${n} reboot operations`, async () => {
        const v = await view(name);
        return rebooted(v) >= earlier + n && !v.currentOperation ? v : undefined;
      });

    let mark = proxy.requests.length;
    const accepted = await h.hosts.reboot(ref);
    expect(accepted.power.reboot).toBeDefined();
    let v = await reboots(1);
    expect(powerTargets(nodeId, mark)).toEqual(['soft power off', 'power on']);
    // The PUT itself (the PATCH before it marks its target on the node).
    const soft = proxy.requests.slice(mark).find((r) => r.method === 'PUT' && r.path.endsWith('/states/power') && r.body.includes('soft power off'))!;
    expect(JSON.parse(soft.body)).toEqual({ target: 'soft power off', timeout: OPTIONS.softPowerOffSeconds });
    expect(v.power.reboot).toBeUndefined();
    expect(v.status.poweredOn).toBe(true);

    mark = proxy.requests.length;
    await h.hosts.reboot(ref, 'hard');
    await reboots(2);
    expect(powerTargets(nodeId, mark)).toEqual(['power off', 'power on']);

    // Ironic answers 400 for a power state the driver cannot do: the hard reboot follows.
    mark = proxy.requests.length;
    proxy.fail((r) => r.method === 'PUT' && r.path.endsWith('/states/power') && r.body.includes('soft power off'), 1, 400,
      'The driver fake-hardware does not support the power state, soft power off');
    await h.hosts.reboot(ref);
    v = await reboots(3);
    expect(powerTargets(nodeId, mark)).toEqual(['soft power off', 'power off', 'power on']);
    expect(v.status.errorCount).toBe(0);
    expect(await ironicPower(nodeId)).toBe('power on');
  });

  it('keyed power-off requests hold the host off (hard wins) until every key is released', async () => {
    const { name, ref, nodeId } = await sharedHost();
    const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
    let mark = proxy.requests.length;
    await handle.executeUpdate(powerRequestsUpdate, { args: [{ holdOff: { upgrade: 'soft', remediation: 'hard' } }] });
    await until('off', async () => !(await view(name)).status.poweredOn && (await ironicPower(nodeId)) === 'power off');
    expect(powerTargets(nodeId, mark)).toEqual(['power off']);

    // A one-shot reboot while held off is served by being off: no reboot is sent.
    await h.hosts.reboot(ref, 'hard');
    await until('reboot served', async () => (await view(name)).power.reboot === undefined);
    mark = proxy.requests.length;
    await h.hosts.releasePowerOff(ref, 'remediation');
    // Wait through two power checks: still off, nothing sent.
    const checks = proxy.requests.length;
    await until('two power checks', async () => proxy.requests.slice(checks).filter((r) => r.method === 'GET' && r.path === `/v1/nodes/${nodeId}?fields=${POWER_FIELDS.join(',')}`).length >= 2);
    expect((await view(name)).status.poweredOn).toBe(false);
    expect(powerTargets(nodeId, mark)).toEqual([]);

    await h.hosts.releasePowerOff(ref, 'upgrade');
    await until('on again', async () => (await view(name)).status.poweredOn && (await ironicPower(nodeId)) === 'power on');
    expect(powerTargets(nodeId, mark)).toEqual(['power on']);
    expect((await view(name)).power.holds).toEqual({});
  });

  it('a soft keyed request uses Ironic soft power off', async () => {
    const { name, ref, nodeId } = await sharedHost();
    const mark = proxy.requests.length;
    await h.hosts.holdPowerOff(ref, 'maint');
    await until('off', async () => !(await view(name)).status.poweredOn);
    expect(powerTargets(nodeId, mark)).toEqual(['soft power off']);
    await h.hosts.releasePowerOff(ref, 'maint');
    await until('on', async () => (await view(name)).status.poweredOn);
  });

  it('with disablePowerOff: reboots through Ironic, reads a keyed power-off as one reboot (as Metal3), and is not powered off before delete', async () => {
    const { name, ref, nodeId } = await provisionedFakeHost({ disablePowerOff: true });
    const mark = proxy.requests.length;
    await h.hosts.reboot(ref);
    const rebooted = (n: number) =>
      until(`rebooted ${n}`, async () => {
        const v = await view(name);
        return v.operations.filter((o) => o.kind === 'reboot' && o.outcome === 'succeeded').length === n && !v.currentOperation;
      });
    await rebooted(1);
    // Patch disable-power-off-reboot (before: a 400): the key is kept, the host rebooted once, never held off.
    const held = await h.hosts.holdPowerOff(ref, 'k', 'hard');
    expect(held.power.holds).toEqual({ k: 'hard' });
    await rebooted(2);
    const v = await view(name);
    expect(v.status.poweredOn).toBe(true);
    expect(v.power.reboot).toBeUndefined();
    // The same key again is no new request: no third reboot.
    await h.hosts.holdPowerOff(ref, 'k', 'hard');
    await h.hosts.remove(ref);
    await until('node deleted', async () => (await ironic.getNode(nodeId)) === undefined, 90_000);
    expect(powerTargets(nodeId, mark)).toEqual(['soft rebooting', 'rebooting']);
  });

  it('rejects a bad mode or key with a 400 naming the field, changing nothing', async () => {
    const { name, ref } = await sharedHost();
    const err = await h.hosts.reboot(ref, 'sideways' as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(400);
    expect((err as ApiError).fields[0]).toMatchObject({ field: 'reboot.mode' });
    const key = await h.hosts.holdPowerOff(ref, 'no spaces allowed').catch((e: unknown) => e);
    expect((key as ApiError).status).toBe(400);
    const v = await view(name);
    expect(v.power.reboot).toBeUndefined();
    expect(v.power.holds).toEqual({});
  });
});

describe('a host whose power belongs to its BMC (ipmi_sim), not Ironic', () => {
  let sim: IpmiSim;
  beforeAll(async () => {
    sim = await startIpmiSim(22635);
  });
  afterAll(async () => {
    await sim?.stop();
  });

  it('follows spec.online through the BMC, corrects a change behind its back, reboots off-then-on, and never calls Ironic', async () => {
    const name = uniq('bmcpw');
    const ref = { namespace: NS, name };
    await h.secrets.write(NS, `${name}-bmc`, { username: IPMI_USER, password: IPMI_PASSWORD });
    const spec: HostSpec = {
      bmc: { address: `ipmi://127.0.0.1:${sim.port}`, credentialsName: `${name}-bmc` },
      online: true,
      externallyProvisioned: true,
      provisioner: 'direct',
    };
    // A host already in its steady state and owned by the BMC (as the direct provisioner leaves
    // it), handed to the workflow the way continue-as-new does.
    const status = emptyStatus();
    status.provisioning.state = 'externally provisioned';
    status.poweredOn = false;
    const state: HostState = {
      ref,
      spec,
      generation: 1,
      registered: registrationFingerprint(spec),
      status,
      deleteRequested: false,
      opSeq: 0,
      operations: [],
      options: { ...DEFAULT_HOST_OPTIONS, ...OPTIONS },
    };
    sim.setPowerFile('0');
    sim.setSoftDelay('0');
    sim.clearCalls();
    const ironicBefore = proxy.requests.length;
    await h.client.workflow.start<typeof hostWorkflow>('hostWorkflow', {
      workflowId: hostWorkflowId(ref),
      taskQueue: h.taskQueue,
      args: [{ ref, state }],
    });
    const sets = () => sim.calls().filter((c) => c.startsWith('set '));
    await until('powered on through the BMC', async () => (await view(name)).status.poweredOn && sim.file('power') === '1');
    expect(sets()).toEqual(['set power 1']);

    // Powered off behind our back.
    sim.setPowerFile('0');
    const fixed = await until('mismatch corrected', async () => {
      const v = await view(name);
      return v.power.lastMismatch && sim.file('power') === '1' && v.status.poweredOn ? v : undefined;
    });
    expect(fixed.power.lastMismatch).toMatchObject({ observedOn: false, recordedOn: true });

    sim.clearCalls();
    await h.hosts.reboot(ref);
    await until('rebooted', async () => {
      const v = await view(name);
      return v.operations.some((o) => o.kind === 'reboot' && o.outcome === 'succeeded') && !v.currentOperation;
    });
    expect(sets()).toEqual(['set shutdown 1', 'set power 1']);

    sim.clearCalls();
    await h.hosts.holdPowerOff(ref, 'k', 'hard');
    await until('held off', async () => !(await view(name)).status.poweredOn);
    expect(sets()).toEqual(['set power 0']);
    await h.hosts.releasePowerOff(ref, 'k');
    await until('on again', async () => (await view(name)).status.poweredOn);
    expect(sim.file('power')).toBe('1');

    expect(proxy.requests.slice(ironicBefore).filter((r) => r.path.includes(name))).toEqual([]);
    await h.client.workflow.getHandle(hostWorkflowId(ref)).terminate('test done');
  });
});

describe('fast inspection', () => {
  const system = '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000002';

  it('inspects a Redfish host from its BMC instead of Ironic inspection, filling status.hardware', async () => {
    const name = uniq('fast');
    const ref = { namespace: NS, name };
    const mark = proxy.requests.length;
    await h.hosts.put(ref, {
      spec: {
        bmc: { address: `redfish+${SUSHY_URL}${system}`, credentialsName: `${name}-bmc` },
        online: false,
        inspectionMode: 'fast',
        automatedCleaningMode: 'disabled',
      },
      credentials: { username: 'admin', password: 'password' },
    });
    const v = await until('available', async () => {
      const x = await view(name);
      return x.status.provisioning.state === 'available' ? x : undefined;
    }, 120_000);
    expect(v.operations.slice(0, 3).map((o) => `${o.kind}:${o.outcome}`)).toEqual(['enroll:succeeded', 'inspect:succeeded', 'prepare:succeeded']);
    expect(v.status.hardware?.cpu?.count).toBeGreaterThan(0);
    expect(v.status.hardware?.ramMebibytes).toBeGreaterThan(0);
    expect(v.status.hardware?.nics?.length).toBeGreaterThan(0);
    expect(v.status.operationHistory.inspect.end).toBeTruthy();
    // Ironic was never asked to inspect.
    const verbs = proxy.requests
      .slice(mark)
      .filter((r) => r.method === 'PUT' && r.path.endsWith('/states/provision') && r.path.includes(v.status.provisioning.ID))
      .map((r) => (JSON.parse(r.body) as { target: string }).target);
    expect(verbs).not.toContain('inspect');
    // As BMO (patch bmo-cleaning-placement): preparing cleans nothing, the node stays manageable until a deploy.
    expect(verbs).toContain('manage');
    expect(verbs).not.toContain('provide');
    await h.hosts.remove(ref);
  });

  it('is refused for an IPMI BMC, naming the field', async () => {
    const name = uniq('fast-ipmi');
    const err = await h.hosts
      .put({ namespace: NS, name }, {
        spec: { bmc: { address: 'ipmi://127.0.0.1:22699', credentialsName: `${name}-bmc` }, online: true, inspectionMode: 'fast' },
        credentials: { username: 'a', password: 'b' },
      })
      .catch((e: unknown) => e);
    expect((err as ApiError).status).toBe(400);
    expect((err as ApiError).fields.map((f) => f.field)).toContain('spec.inspectionMode');
  });
});
