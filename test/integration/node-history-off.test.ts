/**
 * An Ironic set as Metal3's ironic-image sets it: `[conductor] node_history =
 * False`. It answers a node's history with an empty list, and its power sync
 * then keeps `last_error` (it clears it only with history on, where metalflow
 * reads the reason from the history instead). Here, with a real inspection
 * failure: a worker that dies as Ironic accepts its inspection (the sent
 * marker's crash window), read again after two of Ironic's power syncs,
 * neither inspects again nor loses Ironic's reason; and power changes on the
 * failed node work (Ironic clears `last_error` when it accepts one, so the
 * inspection's error is never read as theirs). On an Ironic of its own: the
 * test stack's keeps its history.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import { createIronicActivities } from '../../activities/ironic/activities';
import { createPowerActivities } from '../../activities/power/activities';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { IronicProxy, type RecordedRequest } from '../../bench/support/ironic-proxy';
import { SUSHY_URL } from '../support/env';
import { ownIronic, type OwnIronic } from '../support/own-ironic';
import { unusedPort } from '../support/ports';
import { randomMac, uniq, waitFor } from '../support/harness';

const NS = 'history-off';
/** Read by the clock node's power sync only (never powered here): any test may use it. */
const SYSTEM = '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000007';
const SYNC_SECONDS = 2;

let server: OwnIronic | undefined;
let api: IronicProxy | undefined;
let bmc: IronicProxy | undefined;
let ironic: IronicClient;
beforeAll(async () => {
  server = ownIronic('node-history-off', await unusedPort(), { nodeHistory: false, syncSeconds: SYNC_SECONDS });
  await server.start();
  // metalflow's requests through a recording proxy (the verbs it sent are counted), and the clock node's BMC reads too.
  api = new IronicProxy(server.url);
  await api.start();
  bmc = new IronicProxy(SUSHY_URL);
  await bmc.start();
  ironic = new IronicClient({ url: api.url });
}, 120_000);
afterAll(async () => {
  await bmc?.stop();
  await api?.stop();
  await server?.stop();
});

const isSystemRead = (r: RecordedRequest) => r.method === 'GET' && r.path === SYSTEM;

/**
 * Resolves once Ironic's power sync has run twice since the call: a Redfish node beside the failed one is read from
 * its BMC at every sync (the sync visits every node in one pass), and two reads a sync interval apart are two passes.
 */
async function twoPowerSyncs(): Promise<void> {
  const since = Date.now();
  await waitFor('two of Ironic’s power syncs', async () => {
    const [firstRead, ...later] = bmc!.requests.filter((r) => isSystemRead(r) && r.at >= since).map((r) => r.at);
    return firstRead !== undefined && later.some((at) => at - firstRead >= SYNC_SECONDS * 1000 * 0.75);
  }, { timeoutMs: 60_000 });
}

describe('Ironic with node_history off (as Metal3’s ironic-image)', () => {
  it('a crash after Ironic accepted an inspection: no second inspection, Ironic’s reason kept; power changes on the failed node succeed', { timeout: 240_000 }, async () => {
    // The clock: a manageable Redfish node whose BMC reads mark Ironic's power syncs.
    const clock = await ironic.createNode({
      name: uniq('clock'),
      driver: 'redfish',
      driver_info: { redfish_address: bmc!.url, redfish_system_id: SYSTEM, redfish_username: 'admin', redfish_password: 'password' },
    });
    await ironic.setProvisionState(clock.uuid, 'manage');
    await waitFor('the clock node manageable', async () => (await ironic.getNode(clock.uuid))?.provision_state === 'manageable', { timeoutMs: 60_000 });

    // The host's node: fake hardware inspected by the agent over iPXE, whose ramdisk is at an address that refuses
    // connections: Ironic fails the inspection as soon as it starts it, as it fails one for any reason it records.
    const secrets = new LocalSecretStore(mkdtempSync(join(tmpdir(), 'mf-history-off-')), randomBytes(32));
    const acts = createIronicActivities({ ironic, secrets, poll: { initialMs: 100, factor: 1.5, maxMs: 1000 } });
    const ref = { namespace: NS, name: uniq('host') };
    const created = await ironic.createNode({
      name: `${NS}~${ref.name}`,
      driver: 'fake-hardware',
      inspect_interface: 'agent',
      boot_interface: 'ipxe',
      driver_info: { deploy_kernel: 'http://127.0.0.1:9/ipa.kernel', deploy_ramdisk: 'http://127.0.0.1:9/ipa.initramfs' },
    });
    const nodeId = created.uuid;
    await ironic.createPort(nodeId, randomMac()); // Ironic's managed inspection needs one
    await ironic.setProvisionState(nodeId, 'manage');
    await waitFor('the node manageable', async () => (await ironic.getNode(nodeId))?.provision_state === 'manageable', { timeoutMs: 60_000 });

    const isInspectVerb = (r: RecordedRequest) =>
      r.method === 'PUT' && r.path === `/v1/nodes/${nodeId}/states/provision` && (JSON.parse(r.body) as { target?: string }).target === 'inspect';
    // The first attempt sends the inspection (its sent marker first) and dies as Ironic answers: its heartbeat details
    // go with it. The same activity's next attempt (same workflow and activity id: the marker's key) follows.
    const first = new MockActivityEnvironment();
    api!.onceAnswered(isInspectVerb, () => first.cancel('CANCELLED')); // the worker died
    const died = await first.run(acts.inspectNode, { ref, nodeId }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(died?.name).toBe('CancelledFailure');
    expect(api!.requests.filter(isInspectVerb)).toHaveLength(1);

    // The inspection failed in Ironic, and its power sync runs.
    await waitFor('inspect failed', async () => (await ironic.getNode(nodeId))?.provision_state === 'inspect failed', { timeoutMs: 60_000 });
    await twoPowerSyncs();
    const failedNode = (await ironic.getNode(nodeId))!;
    // Ironic's behaviour with history off, which the rest relies on: no history, and last_error kept through the syncs.
    expect(failedNode.last_error).toMatch(/Failed to inspect hardware/);
    expect(await ironic.getNodeHistory(nodeId)).toEqual([]);

    const retry = await new MockActivityEnvironment().run(acts.inspectNode, { ref, nodeId }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(retry?.message).toBe(`inspection failed: ${failedNode.last_error}`);
    expect(api!.requests.filter(isInspectVerb)).toHaveLength(1);

    // Power changes on the failed node, each sent once (a soft power off not followed by a hard one), then a reboot.
    const power = createPowerActivities({ ironic, bmc: { getBmcPower: async () => ({ poweredOn: false, state: 'off' }) }, poll: { initialMs: 100, factor: 1.5, maxMs: 1000 } });
    const change = (action: 'on' | 'off' | 'reboot', mode?: 'soft' | 'hard') =>
      // Each change its own activity (its own id): the power marker on the node is keyed by the activity.
      new MockActivityEnvironment({ activityId: uniq('power') }).run(power.changeNodePower, { ref, nodeId, action, mode, softTimeoutSeconds: 30 });
    const order: ('on' | 'off')[] = (await ironic.getNode(nodeId))!.power_state === 'power on' ? ['off', 'on'] : ['on', 'off'];
    for (const action of order) {
      expect(await change(action, 'soft')).toEqual(action === 'on' ? { poweredOn: true, sent: ['power on'] } : { poweredOn: false, sent: ['soft power off'] });
    }
    if (order.at(-1) === 'off') await change('on');
    expect(await change('reboot', 'soft')).toEqual({ poweredOn: true, sent: ['soft power off', 'power on'] });
    expect((await acts.setPower({ ref, nodeId, on: false })).poweredOn).toBe(false);
    // Ironic's API cleared the inspection's error with the first power change it accepted (what the power activities
    // rely on to read a last_error after their change as the change's own); the node stays where it failed.
    expect(await ironic.getNode(nodeId)).toMatchObject({ provision_state: 'inspect failed', power_state: 'power off', last_error: null });
    // Both nodes go with this Ironic (started again empty).
  });
});
