/**
 * Pausing, resuming and cancelling a fleet operation through the API, on
 * fake-hardware hosts through their host workflows: a paused fleet starts no
 * host until resumed; a cancelled powerOff starts no more hosts, is not a
 * failure, and releases the power-off requests it held.
 */
import { describe, expect, it } from 'vitest';
import { uniq } from '../support/harness';
import { callApi } from '../support/api-client';
import { useFleetStack, availableHosts, fleetEnded, fleetProgress, startFleet, waitForFleet, waitForHost } from '../support/fleet-hosts';
import { WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { fleetPowerKey, fleetWorkflowId } from '../../contracts/fleet';

const stack = useFleetStack();

describe('fleet pause, resume and cancel', { timeout: 600_000 }, () => {
  it('a paused fleet starts no host until resumed; then it finishes them all', async () => {
    const ns = uniq('fleet');
    const hosts = await availableHosts(stack.base, stack.h, ns, ['pr-a', 'pr-b', 'pr-c', 'pr-d'], { set: 'p' });
    const name = uniq('pause');
    await startFleet(stack.base, { name, operation: { kind: 'reboot' }, selector: { namespace: ns }, maxConcurrent: 1 });
    const paused = await callApi(stack.base, 'POST', `/v1/fleet-operations/${name}/pause`, { reason: 'change window closed' });
    expect(paused.status, paused.text).toBe(200);
    expect(paused.json.paused).toMatchObject({ reason: 'change window closed' });
    const idle = await waitForFleet(stack.base, name, (p) => p.phase === 'paused' && p.counts.inFlight === 0, 'paused with nothing in flight');
    expect(idle.counts.pending).toBeGreaterThanOrEqual(3);
    const since = idle.paused!.since;
    const resumedAt = new Date().toISOString();
    expect((await callApi(stack.base, 'POST', `/v1/fleet-operations/${name}/resume`)).status).toBe(200);
    const done = await waitForFleet(stack.base, name, fleetEnded, 'ended');
    expect(done.phase).toBe('completed');
    expect(done.counts).toMatchObject({ succeeded: 4, failed: 0 });
    // No host started between the pause and the resume.
    for (const x of done.hosts) expect(x.startedAt! < since || x.startedAt! >= resumedAt, `${x.ref.name} started at ${x.startedAt}`).toBe(true);
    for (const x of hosts) expect((await stack.h.hosts.get(x)).operations.filter((o) => o.kind === 'reboot')).toHaveLength(1);
    // An ended fleet takes no more control requests.
    expect((await callApi(stack.base, 'POST', `/v1/fleet-operations/${name}/pause`)).status).toBe(409);
  });

  it('a cancelled powerOff starts no more hosts, records no failure, and releases its holds', async () => {
    const ns = uniq('fleet');
    const hosts = await availableHosts(stack.base, stack.h, ns, ['cx-a', 'cx-b', 'cx-c', 'cx-d'], { set: 'c' });
    const name = uniq('off');
    const key = fleetPowerKey(name);
    await startFleet(stack.base, { name, operation: { kind: 'powerOff', mode: 'hard' }, selector: { namespace: ns, labelSelector: { matchLabels: { set: 'c' } } }, maxConcurrent: 1 });
    // The first host is held off by the fleet's key before the cancel.
    await waitForFleet(stack.base, name, (p) => p.counts.succeeded >= 1, 'one host off');
    const first = await waitForHost(stack.h, hosts[0]!, (v) => key in v.power.holds && !v.status.poweredOn, 'held off');
    expect(first.power.holds[key]).toBe('hard');
    const cancelled = await callApi(stack.base, 'POST', `/v1/fleet-operations/${name}/cancel`, { reason: 'wrong rack' });
    expect(cancelled.status, cancelled.text).toBe(200);
    const done = await waitForFleet(stack.base, name, fleetEnded, 'ended');
    expect(done.phase).toBe('cancelled');
    expect(done.cancelled).toMatchObject({ reason: 'wrong rack' });
    expect(done.counts.failed).toBe(0);
    expect(done.counts.notStarted).toBeGreaterThanOrEqual(1);
    expect(done.counts.succeeded + done.counts.notStarted + done.counts.skipped).toBe(4);
    // Every host the fleet touched is released and powers on again (spec.online).
    for (const x of done.hosts.filter((y) => y.startedAt)) {
      await waitForHost(stack.h, x.ref, (v) => !(key in v.power.holds) && v.status.poweredOn && !v.currentOperation, 'released and on');
    }
    // Hosts never started were never held.
    for (const x of done.hosts.filter((y) => y.outcome === 'notStarted')) expect((await stack.h.hosts.get(x.ref)).operations.filter((o) => o.kind === 'power' && o.startedAt > done.cancelled!.at)).toEqual([]);
    expect((await fleetProgress(stack.base, name)).phase).toBe('cancelled');
  });
});

describe('a fleet operation cancelled from Temporal', { timeout: 600_000 }, () => {
  it('ends Canceled, records no failure, and a powerOff releases its holds', async () => {
    const ns = uniq('fleet');
    await availableHosts(stack.base, stack.h, ns, ['tc-a', 'tc-b', 'tc-c'], { set: 't' });
    const name = uniq('tcancel');
    const key = fleetPowerKey(name);
    await startFleet(stack.base, { name, operation: { kind: 'powerOff', mode: 'hard' }, selector: { namespace: ns }, maxConcurrent: 1 });
    await waitForFleet(stack.base, name, (p) => p.counts.succeeded >= 1, 'one host off');
    const handle = stack.h.client.workflow.getHandle(fleetWorkflowId(name));
    await handle.cancel();
    const err = await handle.result().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect((err as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    const p = await fleetProgress(stack.base, name);
    expect(p.phase).toBe('cancelled');
    expect(p.counts.failed).toBe(0);
    expect(p.counts.inFlight + p.counts.pending).toBe(0);
    for (const x of p.hosts.filter((y) => y.startedAt)) {
      await waitForHost(stack.h, x.ref, (v) => !(key in v.power.holds) && v.status.poweredOn && !v.currentOperation, 'released and on');
    }
  });
});
