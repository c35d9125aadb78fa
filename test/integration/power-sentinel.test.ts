/**
 * The power sentinel (workflows/power/power-sentinel.ts) on the real stack: hosts
 * whose own power check would come only in an hour (watchedPowerCheckSeconds
 * 3600), their Ironic nodes powered off behind their backs. The host the
 * sentinel watches (its namespace) notices within seconds through the
 * `powerChanged` signal, records the mismatch and powers on again; the one
 * outside its namespace, powered off at the same time, has noticed nothing.
 * The host's history replays with today's code; cancelling the sentinel ends
 * it cancelled, never failed. A node moved to another provision state behind
 * metalflow's back reaches its host as well. At the default interval, an
 * `ipmi://` host powered off at its BMC (ipmi_sim) is found by Ironic's power
 * sync and the sentinel and powered on again within the two intervals.
 * Workers start one sentinel per task queue, and a worker set to 0 cancels
 * the one running.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { IronicClient } from '../../clients/ironic/client';
import type { HostRef } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import { powerSentinelWorkflowId, type PowerSentinelWorkflow } from '../../contracts/power-sentinel';
import type { WatchPowerResult } from '../../activities/power/sentinel';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { IRONIC_URL, TEMPORAL_ADDRESS, WORKFLOW_BUNDLE_PATH } from '../support/env';
import { startPowerSentinel, stopPowerSentinel } from '../../workers/power-sentinel-start';
import { DEFAULT_POWER_SENTINEL_SECONDS } from '../../config/env';
import type { PowerChanged } from '../../contracts/host';
import { IPMI_PASSWORD, IPMI_USER, startIpmiSim, type IpmiSim } from '../bmc/support/ipmi-sim';
import { unusedPort } from '../support/ports';

let h: Harness;
let sim: IpmiSim | undefined;
const ironic = new IronicClient({ url: IRONIC_URL });

beforeAll(async () => {
  h = await startHarness({ hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 3600, watchedPowerCheckSeconds: 3600 } });
}, 120_000);
afterAll(async () => {
  await h?.close();
  await sim?.stop();
});

const view = (ref: HostRef): Promise<HostView> => h.client.workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery);

async function availableHost(namespace: string, bmc = { address: `fake://${namespace}`, username: 'admin', password: 'pw' }): Promise<{ ref: HostRef; nodeId: string }> {
  const ref = { namespace, name: 'pw' };
  await h.hosts.put(ref, {
    spec: { bmc: { address: bmc.address, credentialsName: 'pw-bmc' }, bootMACAddress: randomMac(), online: true, inspectionMode: 'disabled', automatedCleaningMode: 'disabled' },
    credentials: { username: bmc.username, password: bmc.password },
  });
  const v = await waitFor(`${namespace} available and on`, async () => {
    const x = await view(ref);
    return x.status.provisioning.state === 'available' && x.status.poweredOn && !x.currentOperation ? x : undefined;
  }, { timeoutMs: 180_000 });
  return { ref, nodeId: v.status.provisioning.ID };
}

/** A sentinel listing every second (or `intervalSeconds`) for the hosts of `namespace`, once it has its first list (the baseline: a change is one between two lists). */
async function watching(namespace: string, intervalSeconds = 1) {
  const sentinel = await h.client.workflow.start<PowerSentinelWorkflow>('powerSentinelWorkflow', {
    workflowId: powerSentinelWorkflowId(uniq(`${h.taskQueue}-${namespace}`)),
    taskQueue: h.taskQueue,
    args: [{ intervalSeconds, watchSeconds: Math.max(120, 10 * intervalSeconds), namespace }],
  });
  await waitFor('the sentinel listed Ironic', async () => {
    const d = await sentinel.describe();
    const payload = d.raw.pendingActivities?.[0]?.heartbeatDetails?.payloads?.[0];
    return payload && defaultPayloadConverter.fromPayload<WatchPowerResult>(payload).lists >= 1 ? true : undefined;
  });
  return sentinel;
}

// The first three run at once: each has hosts, a namespace and a sentinel of its own, and the third waits for
// Ironic's power sync (30 s) whatever else runs.
describe('the power sentinel', { timeout: 300_000 }, () => {
  it.concurrent('tells a watched host its node was powered off behind its back; the host checks, records and powers on', async () => {
    // Namespaces of this attempt's own (a retry must not find the first attempt's hosts).
    const WATCHED = uniq('sentinel');
    const [watched, other] = await Promise.all([availableHost(WATCHED), availableHost(uniq('unwatched'))]);
    const sentinel = await watching(WATCHED);
    await Promise.all([ironic.setPowerState(watched.nodeId, 'power off'), ironic.setPowerState(other.nodeId, 'power off')]);

    const fixed = await waitFor('the watched host found off and powered on again', async () => {
      const v = await view(watched.ref);
      return v.power.lastMismatch && v.status.poweredOn && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 60_000 });
    expect(fixed.power.lastMismatch).toMatchObject({ observedOn: false, recordedOn: true });
    expect((await ironic.getNode(watched.nodeId))?.power_state).toBe('power on');
    // Outside the sentinel's namespace: still believed on, its check an hour away.
    const unwatched = await view(other.ref);
    expect(unwatched.power.lastMismatch).toBeUndefined();
    expect(unwatched.status.poweredOn).toBe(true);

    const handle = h.client.workflow.getHandle(hostWorkflowId(watched.ref));
    // Moved to another resting provision state behind metalflow's back (manageable -> available): told too.
    await ironic.setProvisionState(watched.nodeId, 'provide');
    const moved = await waitFor('the host told its node moved', async () => {
      const events = (await handle.fetchHistory()).events ?? [];
      const told = events
        .map((e) => e.workflowExecutionSignaledEventAttributes)
        .filter((a) => a?.signalName === 'powerChanged' && a.input?.payloads?.[0])
        .map((a) => defaultPayloadConverter.fromPayload<PowerChanged>(a!.input!.payloads![0]!));
      return told.find((t) => t.provision);
    }, { timeoutMs: 60_000 });
    expect(moved.provision).toEqual({ from: 'manageable', to: 'available' });
    const history = await handle.fetchHistory();
    const signals = (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'powerChanged');
    expect(signals.length).toBeGreaterThanOrEqual(1);
    await expect(Worker.runReplayHistory({ workflowBundle: { codePath: WORKFLOW_BUNDLE_PATH }, replayName: 'sentinel-host' }, history)).resolves.toBeUndefined();

    await sentinel.cancel();
    const closed = await waitFor('the sentinel closed', async () => {
      const d = await sentinel.describe();
      return d.status.name === 'RUNNING' ? undefined : d.status.name;
    });
    expect(closed).toBe('CANCELLED');
    await ironic.setPowerState(other.nodeId, 'power on');
  });

  it.concurrent('tells a resting host its node vanished from Ironic; the host registers again on a node of its own', async () => {
    const WATCHED = uniq('lost');
    const host = await availableHost(WATCHED);
    const sentinel = await watching(WATCHED);
    // Behind the host's back (its own check an hour away): as after Ironic lost its database.
    const lostAt = Date.now();
    await ironic.setMaintenance(host.nodeId, 'test: the node goes away');
    await ironic.deleteNode(host.nodeId);
    const again = await waitFor('the host registered again', async () => {
      const v = await view(host.ref);
      return v.status.provisioning.ID && v.status.provisioning.ID !== host.nodeId && v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 120_000 });
    // A new fake-hardware node reports no power state until one is set: the host, recorded on, stays so and is not
    // powered on again for it (as BMO), so the node says nothing of its power, and nothing says it is off.
    const node = await ironic.getNode(again.status.provisioning.ID);
    expect(node).toMatchObject({ provision_state: 'manageable' });
    expect([null, 'power on']).toContain(node?.power_state ?? null);
    expect(again.status.errorCount).toBe(0);
    expect(again.operations.some((o) => o.kind === 'enroll' && o.outcome === 'succeeded' && Date.parse(o.startedAt) > lostAt)).toBe(true);
    await sentinel.cancel();
  });

  it.concurrent('tells a resting host whose node it never listed that the node is gone; a host on no Ironic node at all only twice', async () => {
    const ns = uniq('unlisted');
    // The direct provisioner's host, resting on no Ironic node, beside a host on one.
    const bmc = await startIpmiSim(await unusedPort());
    try {
      const direct = { namespace: ns, name: 'direct' };
      await h.hosts.put(direct, {
        spec: { bmc: { address: `ipmi://127.0.0.1:${bmc.port}`, credentialsName: 'direct-bmc' }, online: true, externallyProvisioned: true, provisioner: 'direct' },
        credentials: { username: IPMI_USER, password: IPMI_PASSWORD },
      });
      const [host] = await Promise.all([
        availableHost(ns),
        waitFor('the direct host at rest', async () => {
          const v = await view(direct);
          return v.status.provisioning.state === 'externally provisioned' && !v.currentOperation ? v : undefined;
        }, { timeoutMs: 60_000 }),
      ]);
      // Its node made and lost before the sentinel's list (as for a host registered after the last list and
      // Ironic emptied before the next one): no list ever held it, so no vanish can show it.
      await ironic.setMaintenance(host.nodeId, 'test: lost before any list');
      await ironic.deleteNode(host.nodeId);
      const sentinel = await watching(ns);
      await waitFor('the host registered again', async () => {
        const v = await view(host.ref);
        return v.status.provisioning.ID && v.status.provisioning.ID !== host.nodeId && v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation ? v : undefined;
      }, { timeoutMs: 60_000 });
      // Several lists later the host with no node has been told twice (the sweep, once more), no more, and the
      // count has called for no other sweep: both hosts are known (a node, or told it has none).
      const progress = async (): Promise<WatchPowerResult | undefined> => {
        const payload = (await sentinel.describe()).raw.pendingActivities?.[0]?.heartbeatDetails?.payloads?.[0];
        return payload ? defaultPayloadConverter.fromPayload<WatchPowerResult>(payload) : undefined;
      };
      const after = (await progress())?.lists ?? 0;
      const later = await waitFor('five more lists', async () => {
        const p = await progress();
        return p && p.lists >= after + 5 ? p : undefined;
      }, { timeoutMs: 60_000 });
      expect(later.sweeps).toBe(1);
      const told = ((await h.client.workflow.getHandle(hostWorkflowId(direct)).fetchHistory()).events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'powerChanged');
      expect(told.length).toBeGreaterThanOrEqual(1);
      expect(told.length).toBeLessThanOrEqual(2);
      await sentinel.cancel();
      for (const ref of [host.ref, direct]) await h.client.workflow.getHandle(hostWorkflowId(ref)).terminate('test done');
    } finally {
      await bmc.stop();
    }
  });

  it.concurrent('at the default interval, finds an ipmi:// host powered off at its BMC and powers it on within Ironic\'s power sync plus one interval', async () => {
    sim = await startIpmiSim(await unusedPort());
    const ns = uniq('sentinel-ipmi');
    const host = await availableHost(ns, { address: `ipmi://127.0.0.1:${sim.port}`, username: IPMI_USER, password: IPMI_PASSWORD });
    const sentinel = await watching(ns, DEFAULT_POWER_SENTINEL_SECONDS);
    expect(sim.file('power')).toBe('1');
    // Off behind everyone's back: only Ironic's power sync can see it, then the sentinel's list.
    const off = Date.now();
    sim.setPowerFile('0');
    const syncSeconds = Number(process.env.IRONIC_SYNC_POWER_STATE_INTERVAL ?? 30);
    const fixed = await waitFor('the host found off and powered on again', async () => {
      const v = await view(host.ref);
      return v.power.lastMismatch && v.status.poweredOn && !v.currentOperation && sim!.file('power') === '1' ? v : undefined;
    }, { timeoutMs: (syncSeconds + DEFAULT_POWER_SENTINEL_SECONDS) * 1000 + 30_000, intervalMs: 500 });
    console.log(`powered on again ${Date.now() - off} ms after the BMC went off (sync ${syncSeconds} s, sentinel ${DEFAULT_POWER_SENTINEL_SECONDS} s)`);
    expect(fixed.power.lastMismatch).toMatchObject({ observedOn: false, recordedOn: true });
    await sentinel.cancel();
    await h.client.workflow.getHandle(hostWorkflowId(host.ref)).terminate('test done');
  });

  it('runs one sentinel per task queue however many workers start it, and a worker set to 0 cancels it', async () => {
    // What workers/main.ts does at start: every worker asks (on by default), and with METALFLOW_POWER_SENTINEL_SECONDS=0 it stops one left running.
    const settings = { connection: { address: TEMPORAL_ADDRESS }, namespace: 'default', taskQueue: h.taskQueue };
    const [first, second] = await Promise.all([startPowerSentinel({ ...settings, intervalSeconds: 30 }), startPowerSentinel({ ...settings, intervalSeconds: 30 })]);
    expect(second).toBe(first);
    const handle = h.client.workflow.getHandle(first);
    const runId = (await handle.describe()).runId;
    expect(await startPowerSentinel({ ...settings, intervalSeconds: 30 })).toBe(first);
    expect((await handle.describe()).runId).toBe(runId);

    expect(await stopPowerSentinel(settings)).toBe(true);
    const closed = await waitFor('the sentinel closed', async () => {
      const d = await handle.describe();
      return d.status.name === 'RUNNING' ? undefined : d.status.name;
    });
    expect(closed).toBe('CANCELLED');
    // Nothing running: nothing to stop.
    expect(await stopPowerSentinel(settings)).toBe(false);
  });
});
