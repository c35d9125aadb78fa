/**
 * Fleet waves on the real stack (Temporal, Ironic fake-hardware): a 1-host
 * canary, then waves of two, pausing after each wave until resumed. What
 * each host did is read from the host workflows' own operation records.
 */
import { describe, expect, it } from 'vitest';
import { uniq } from '../support/harness';
import { callApi } from '../support/api-client';
import { useFleetStack, availableHosts, fleetEnded, peakOverlap, startFleet, waitForFleet } from '../support/fleet-hosts';
import { fleetWorkflowId, type FleetProgress } from '../../contracts/fleet';
import type { fleetWorkflow } from '../../workflows/fleet/fleet';

const stack = useFleetStack();

const reboots = async (ref: { namespace: string; name: string }) => (await stack.h.hosts.get(ref)).operations.filter((o) => o.kind === 'reboot');
const pausedAfterWave = (wave: number) => (p: FleetProgress) => p.phase === 'paused' && p.counts.inFlight === 0 && p.wave?.current === wave + 1;

describe('fleet waves', { timeout: 600_000 }, () => {
  it('a canary, then waves of two: after each wave nothing of the next runs until resumed; then all finish', async () => {
    const ns = uniq('fleet');
    const hosts = await availableHosts(stack.base, stack.h, ns, ['wv-a', 'wv-b', 'wv-c', 'wv-d', 'wv-e'], { set: 'w' });
    const name = uniq('waves');
    const started = await startFleet(stack.base, {
      name,
      operation: { kind: 'reboot' },
      selector: { namespace: ns },
      maxConcurrent: 5,
      waves: [{ size: 1 }, { size: '40%' }],
      pauseAfterWave: true,
    });
    expect(started.input.waves).toEqual([{ size: 1 }, { size: '40%' }]);

    // The canary ran alone; the run paused after it, with the second wave next.
    const afterCanary = await waitForFleet(stack.base, name, pausedAfterWave(1), 'paused after the canary');
    expect(afterCanary.wave).toEqual({ current: 2, count: 3, first: 1, end: 3 });
    expect(afterCanary.counts).toMatchObject({ succeeded: 1, pending: 4, inFlight: 0, failed: 0 });
    expect(afterCanary.paused?.reason).toBe('wave 1 of 3 done: resume to start wave 2');
    expect(await reboots(hosts[0]!)).toHaveLength(1);
    for (const x of hosts.slice(1)) expect(await reboots(x), `${x.name} before the resume`).toEqual([]);

    const firstResume = new Date().toISOString();
    expect((await callApi(stack.base, 'POST', `/v1/fleet-operations/${name}/resume`)).status).toBe(200);
    const afterSecond = await waitForFleet(stack.base, name, pausedAfterWave(2), 'paused after the second wave');
    expect(afterSecond.counts).toMatchObject({ succeeded: 3, pending: 2, inFlight: 0 });
    expect(afterSecond.wave).toMatchObject({ current: 3, first: 3, end: 5 });
    for (const x of hosts.slice(3)) expect(await reboots(x), `${x.name} before the second resume`).toEqual([]);

    const secondResume = new Date().toISOString();
    expect((await callApi(stack.base, 'POST', `/v1/fleet-operations/${name}/resume`)).status).toBe(200);
    const done = await waitForFleet(stack.base, name, fleetEnded, 'ended');
    expect(done.phase).toBe('completed');
    expect(done.counts).toMatchObject({ succeeded: 5, failed: 0, skipped: 0 });
    expect(done.paused).toBeUndefined();
    // From the host workflows' records: each host rebooted once, each wave's hosts only after its resume.
    const records = await Promise.all(hosts.map(reboots));
    expect(records.map((r) => r.length)).toEqual([1, 1, 1, 1, 1]);
    for (const r of records.slice(1, 3)) expect(r[0]!.startedAt >= firstResume, `wave 2 started at ${r[0]!.startedAt}`).toBe(true);
    for (const r of records.slice(3)) expect(r[0]!.startedAt >= secondResume, `wave 3 started at ${r[0]!.startedAt}`).toBe(true);
    expect(records[0]![0]!.endedAt! <= firstResume).toBe(true);
  });

  it('without pauseAfterWave the waves run back to back; a skipped canary is no failure', async () => {
    const ns = uniq('fleet');
    const hosts = await availableHosts(stack.base, stack.h, ns, ['wf-a', 'wf-b', 'wf-c'], { set: 'f' });
    // The canary is paused beforehand: it is skipped, which is no failure, so the next wave starts.
    expect((await callApi(stack.base, 'PUT', `/v1/namespaces/${ns}/hosts/wf-a/paused`, { reason: 'held back' })).status).toBe(200);
    const name = uniq('wfail');
    await startFleet(stack.base, { name, operation: { kind: 'reboot' }, selector: { namespace: ns }, waves: [{ size: 1 }], maxConcurrent: 3 });
    const done = await waitForFleet(stack.base, name, fleetEnded, 'ended');
    expect(done.phase).toBe('completed');
    expect(done.counts).toMatchObject({ skipped: 1, succeeded: 2 });
    expect(done.wave).toMatchObject({ current: 3, count: 3 });
    expect(await reboots(hosts[0]!)).toEqual([]);
  });

  it('a run continued as new keeps its wave: waves of one stay one host at a time, each host once', async () => {
    const ns = uniq('fleet');
    const hosts = await availableHosts(stack.base, stack.h, ns, ['wc-a', 'wc-b', 'wc-c', 'wc-d'], { set: 'c' });
    const name = uniq('wcan');
    const handle = await stack.h.client.workflow.start<typeof fleetWorkflow>('fleetWorkflow', {
      workflowId: fleetWorkflowId(name),
      taskQueue: stack.h.taskQueue,
      args: [{ name, operation: { kind: 'reboot' }, selector: { namespace: ns }, maxConcurrent: 4, waves: [{ size: 1 }] }, { options: { maxHistoryEvents: 40 } }],
    });
    const done = await handle.result();
    expect(done.runs).toBeGreaterThan(1);
    expect(done.counts).toMatchObject({ succeeded: 4, failed: 0 });
    expect(done.wave).toMatchObject({ current: 4, count: 4 });
    const records = (await Promise.all(hosts.map(reboots))).map((r) => {
      expect(r).toHaveLength(1);
      return { start: r[0]!.startedAt, end: r[0]!.endedAt! };
    });
    expect(peakOverlap(records)).toBe(1);
  });
});
