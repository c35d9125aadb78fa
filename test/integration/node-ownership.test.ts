/**
 * Destructive calls touch only nodes metalflow owns (issue 10 item 7): an
 * operator's own Ironic node that holds a host's boot MAC but carries no
 * `extra.metalflow_host` mark is never powered off, put in maintenance,
 * deleted or taken over, whatever happens to the host. Against the real
 * Ironic, through the activities and through the host workflow (an Ironic
 * host whose node went away, and a `provisioner: direct` host with an
 * IPMI BMC, ipmi_sim, which has no node at all).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { createIronicActivities } from '../../activities/ironic/activities';
import type { IronicNode } from '../../clients/ironic/types';
import type { HostRef, HostSpec } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { applyDirectivesUpdate, hostViewQuery, type HostView } from '../../contracts/host';
import type { hostWorkflow } from '../../workflows/host/host';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { IPMI_PASSWORD, IPMI_USER, startIpmiSim, type IpmiSim } from '../bmc/support/ipmi-sim';
import { IronicProxy } from '../../bench/support/ironic-proxy';
import { IRONIC_URL } from '../support/env';

const NS = 'ownership';
const IPMI_PORT = Number(process.env.TEST_OWNERSHIP_IPMI_PORT ?? 22637);
let h: Harness;
let sim: IpmiSim;
/** Every request the worker (and the test) makes to Ironic, to show what a direct host asks of it: nothing. */
const proxy = new IronicProxy(IRONIC_URL);

beforeAll(async () => {
  await proxy.start();
  h = await startHarness({ hostOptions: FAST_HOST_OPTIONS, ironicUrl: proxy.url });
  sim = await startIpmiSim(IPMI_PORT);
}, 60_000);

afterAll(async () => {
  await h?.close();
  await sim?.stop();
  await proxy.stop();
});

/** An operator's own node: registered by hand, powered on, holding `mac`, with no metalflow mark. */
async function operatorsNode(mac: string): Promise<IronicNode> {
  const node = await h.ironic.createNode({ name: uniq('operators-own'), driver: 'fake-hardware' });
  await h.ironic.createPort(node.uuid, mac);
  await h.ironic.setPowerState(node.uuid, 'power on');
  await waitFor('operator node on', async () => (await h.ironic.getNode(node.uuid))?.power_state === 'power on');
  return node;
}

async function expectUntouched(node: IronicNode): Promise<void> {
  const now = await h.ironic.getNode(node.uuid);
  expect(now, `operator's node ${node.name} must survive`).toBeDefined();
  expect(now!.maintenance).toBe(false);
  expect(now!.power_state).toBe('power on');
  expect(now!.name).toBe(node.name);
  expect(now!.extra.metalflow_host).toBeUndefined();
}

describe('the activities, with an operator node on the boot MAC', () => {
  const acts = () => createIronicActivities({ ironic: h.ironic, secrets: h.secrets, poll: { initialMs: 100, factor: 1.5, maxMs: 1000 } });
  const ref = (): HostRef => ({ namespace: NS, name: uniq('act') });

  it('power off, delete and detach leave it alone and say which node and why', async () => {
    const mac = randomMac();
    const node = await operatorsNode(mac);
    const a = acts();
    const power = await a.setPower({ ref: ref(), bootMACAddress: mac, on: false });
    expect(power.found).toBe(false);
    expect(power.untouched).toMatch(new RegExp(`Ironic node ${node.name} \\(${node.uuid}\\) has boot MAC ${mac} but no metalflow ownership mark \\(extra\\.metalflow_host\\).*not powered off`));
    const deleted = await a.deleteNode({ ref: ref(), bootMACAddress: mac });
    expect(deleted.untouched).toMatch(/no metalflow ownership mark.*; not deleted$/);
    const detached = await a.detachNode({ ref: ref(), bootMACAddress: mac });
    expect(detached.untouched).toMatch(/; not detached$/);
    await expectUntouched(node);
  });

  it('registration neither takes it over nor changes it', async () => {
    const mac = randomMac();
    const node = await operatorsNode(mac);
    const r = ref();
    await h.secrets.write(NS, `${r.name}-bmc`, { username: 'admin', password: 'pw' });
    const spec: HostSpec = { bmc: { address: `fake://${r.name}`, credentialsName: `${r.name}-bmc` }, bootMACAddress: mac, online: true };
    const err = await acts().ensureNode({ ref: r, spec }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).type).toBe('OperationFailed');
    expect((err as ApplicationFailure).message).toContain(`boot MAC ${mac} is already registered to Ironic node ${node.name}`);
    expect((err as ApplicationFailure).message).toContain(`set its extra.metalflow_host to "${NS}/${r.name}"`);
    await expectUntouched(node);
  });

  it('a node marked for another host is not touched either', async () => {
    const mac = randomMac();
    const other = await h.ironic.createNode({ name: uniq('other'), driver: 'fake-hardware', extra: { metalflow_host: `${NS}/someone-else` } });
    await h.ironic.createPort(other.uuid, mac);
    const deleted = await acts().deleteNode({ ref: ref(), bootMACAddress: mac });
    expect(deleted.untouched).toMatch(/belongs to host ownership\/someone-else/);
    expect(await h.ironic.getNode(other.uuid)).toBeDefined();
  });
});

describe('the host workflow, with an operator node on the boot MAC', () => {
  const handle = (r: HostRef) => h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(r));
  const settled = (r: HostRef, state: string) =>
    waitFor(`${r.name} ${state}`, async () => {
      const v = await handle(r).query(hostViewQuery);
      return v.status.provisioning.state === state && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 120_000 });

  it('deleting an Ironic host whose node went away leaves the operator node with its MAC alone', async () => {
    const r = { namespace: NS, name: uniq('gone') };
    const mac = randomMac();
    await h.hosts.put(r, {
      spec: { bmc: { address: `fake://${r.name}`, credentialsName: `${r.name}-bmc` }, bootMACAddress: mac, online: true },
      credentials: { username: 'admin', password: 'pw' },
    });
    const nodeId = (await settled(r, 'available')).status.provisioning.ID;
    // The host's node is removed behind its back; an operator registers the machine by hand.
    await h.ironic.deleteNode(nodeId);
    const node = await operatorsNode(mac);
    await h.hosts.remove(r);
    const final = (await handle(r).result()) as HostView;
    await expectUntouched(node);
    const notes = final.operations.map((o) => o.note ?? '').join('\n');
    expect(notes).toContain(`Ironic node ${node.name} (${node.uuid}) has boot MAC ${mac} but no metalflow ownership mark`);
  }, 180_000);

  it('detaching a direct host asks nothing of Ironic and leaves the operator node alone', async () => {
    const r = { namespace: NS, name: uniq('direct') };
    const mac = randomMac();
    await h.hosts.put(r, {
      spec: { bmc: { address: `ipmi://127.0.0.1:${sim.port}`, credentialsName: `${r.name}-ipmi` }, bootMACAddress: mac, online: false, provisioner: 'direct' },
      credentials: { username: IPMI_USER, password: IPMI_PASSWORD },
    });
    await settled(r, 'available');
    const node = await operatorsNode(mac);
    await handle(r).executeUpdate(applyDirectivesUpdate, { args: [{ detached: { deleteAction: 'delete', force: false } }] });
    await waitFor('detached', async () => {
      const v = await handle(r).query(hostViewQuery);
      return v.operations.some((o) => o.kind === 'detach' && o.outcome === 'succeeded') && !v.currentOperation;
    }, { timeoutMs: 120_000 });
    await expectUntouched(node);
    await h.hosts.remove(r);
    await handle(r).result();
    await expectUntouched(node);
    // No lookup by the host's node name or boot MAC ever reached Ironic.
    expect(proxy.count((q) => q.path.includes(`${NS}~${r.name}`) || q.path.includes(encodeURIComponent(mac)) || q.path.includes(mac))).toBe(0);
  }, 180_000);
});
