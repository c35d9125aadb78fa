/**
 * A fleet's start of a host (startFleetChange) on the real host workflow, on
 * Temporal's time-skipping test server with the fixture provisioner
 * (test/support/host-time-skipping.ts): one `fleetChange` update per host,
 * no query and no describe first, and the host itself answers what the
 * query used to tell the fleet. A start run twice (a retried activity) acts
 * once; a host at its goal, paused, or refusing the change is left alone
 * with that as its result. Tier 0: no stack.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { createFleetActivities } from '../../activities/fleet/activities';
import { applySpecUpdate, setPausedUpdate } from '../../contracts/host';
import { FLEET_CHANGE, fleetChangeUpdate, type FleetChangeRequest } from '../../contracts/fleet-change';
import type { HostRef } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { countingClient, type ReadCounts } from '../support/counting-client';
import { startHostTimeSkipping, timeSkippingUnavailable, type HostTimeSkipping } from '../support/host-time-skipping';

const unavailable = timeSkippingUnavailable();

let t: HostTimeSkipping;
/** The fleet's activities on a client that counts the reads they send. */
let fleet: ReturnType<typeof createFleetActivities>;
let reads: ReadCounts = { queries: 0, describes: 0, lists: 0 };

beforeAll(async () => {
  if (unavailable) return;
  t = await startHostTimeSkipping({ provisioningLimit: 0 });
  const counting = countingClient(t.env.client.connection, t.env.client.options.namespace);
  reads = counting.reads;
  fleet = createFleetActivities({ client: counting.client });
}, 180_000);
afterAll(async () => {
  await t?.close();
});

const idle = (v: { status: { provisioning: { state: string } }; currentOperation?: unknown }) => v.status.provisioning.state === 'available' && v.currentOperation === undefined;

/** The fleetChange updates the host's history holds (accepted: applied; a refused one leaves nothing). */
async function acceptedAsks(ref: HostRef): Promise<number> {
  const history = await t.env.client.workflow.getHandle(hostWorkflowId(ref)).fetchHistory();
  return (history.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === fleetChangeUpdate.name).length;
}

/** The host's refusal of an ask sent with an id of its own (as a retried call meets it in a host run that continued as new). */
async function refusalType(ref: HostRef, request: FleetChangeRequest): Promise<string | undefined> {
  try {
    await t.env.client.workflow.getHandle(hostWorkflowId(ref)).executeUpdate(fleetChangeUpdate, { args: [request] });
    return undefined;
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) return err.cause.type ?? undefined;
    throw err;
  }
}

describe.skipIf(unavailable !== undefined)(`a fleet's start of a host${unavailable ? ` (skipped: ${unavailable})` : ''}`, () => {
  it('a start run twice reboots once and cleans once, with no query or describe; asked again after, the answer is the first call\'s, or the host\'s: done', async () => {
    const ref = { namespace: 'fleet-ts', name: 'twice' };
    await t.put(ref, { automatedCleaningMode: 'disabled' });
    await t.until(ref, 'available', idle);
    reads.queries = 0;
    reads.describes = 0;

    const reboot = { ref, operation: { kind: 'reboot', mode: 'hard' } as const, fleet: 'ts', since: new Date().toISOString() };
    // The same call twice at once (a retry while the first is still on its way), then once more.
    expect(await Promise.all([fleet.startFleetChange(reboot), fleet.startFleetChange(reboot)])).toEqual([{ sent: true }, { sent: true }]);
    expect(await fleet.startFleetChange(reboot)).toEqual({ sent: true });
    expect(reads).toEqual({ queries: 0, describes: 0, lists: 0 });
    // The same ask under another id (the server's deduplication lost with a continue-as-new): the host's own state says it was asked.
    expect([FLEET_CHANGE.wait, FLEET_CHANGE.settled]).toContain(await refusalType(ref, { fleet: reboot.fleet, operation: reboot.operation, since: reboot.since }));
    const rebooted = await t.until(ref, 'rebooted', (v) => idle(v) && v.operations.some((o) => o.kind === 'reboot' && o.outcome === 'succeeded'));
    expect(rebooted.operations.filter((o) => o.kind === 'reboot')).toHaveLength(1);
    // A retry after the reboot ran: the server answers the first call's outcome; under another id, the host says it is done.
    expect(await fleet.startFleetChange(reboot)).toEqual({ sent: true });
    expect(await refusalType(ref, { fleet: reboot.fleet, operation: reboot.operation, since: reboot.since })).toBe(FLEET_CHANGE.settled);

    const clean = { ref, operation: { kind: 'clean' as const, steps: [{ name: 'erase-metadata' }] }, fleet: 'ts', since: new Date().toISOString() };
    expect(await fleet.startFleetChange(clean)).toEqual({ sent: true });
    expect(await fleet.startFleetChange(clean)).toEqual({ sent: true });
    expect([FLEET_CHANGE.wait, FLEET_CHANGE.settled]).toContain(await refusalType(ref, { fleet: clean.fleet, operation: clean.operation, since: clean.since }));
    const cleaned = await t.until(ref, 'cleaned', (v) => idle(v) && !v.cleanRequest && v.operations.some((o) => o.kind === 'clean' && o.outcome === 'succeeded'));
    expect(cleaned.operations.filter((o) => o.kind === 'clean')).toHaveLength(1);
    expect(await fleet.startFleetChange(clean)).toEqual({ sent: true });
    expect(await refusalType(ref, { fleet: clean.fleet, operation: clean.operation, since: clean.since })).toBe(FLEET_CHANGE.settled);
    expect(reads).toEqual({ queries: 0, describes: 0, lists: 0 });
    // One reboot and one clean applied: every other ask was answered, not applied.
    expect(await acceptedAsks(ref)).toBe(2);
  });

  it('a host at its goal, a paused host and a refused change are results, and nothing is applied', async () => {
    const ref = { namespace: 'fleet-ts', name: 'settled' };
    await t.put(ref, { automatedCleaningMode: 'disabled', inspectionMode: 'disabled' });
    await t.until(ref, 'available', idle);
    const since = new Date().toISOString();
    // Available without an image: a deprovision has nothing to do.
    expect(await fleet.startFleetChange({ ref, operation: { kind: 'deprovision' }, fleet: 'ts', since })).toEqual({ result: { outcome: 'succeeded' } });
    // Inspection disabled: the host's own refusal of the request is its failure.
    expect(await fleet.startFleetChange({ ref, operation: { kind: 'reinspect' }, fleet: 'ts', since })).toEqual({
      result: { outcome: 'failed', error: expect.stringMatching(/^the host refused the change \(InvalidRequest\): inspection is disabled/) },
    });
    await t.handle(ref).executeUpdate(setPausedUpdate, { args: [{ paused: true, reason: 'maintenance' }] });
    expect(await fleet.startFleetChange({ ref, operation: { kind: 'reboot' }, fleet: 'ts', since })).toEqual({ result: { outcome: 'skipped', reason: 'the host is paused (maintenance)' } });
    const view = await t.view(ref);
    expect(view.power.reboot).toBeUndefined();
    expect(view.operations.filter((o) => o.kind === 'reboot' || o.kind === 'inspect' && o.startedAt >= since)).toEqual([]);
    expect(await acceptedAsks(ref)).toBe(0);
    // A host that does not exist: read, then skipped (a delete of it has succeeded).
    const gone = { namespace: 'fleet-ts', name: 'never' };
    expect(await fleet.startFleetChange({ ref: gone, operation: { kind: 'reboot' }, fleet: 'ts', since })).toEqual({ result: { outcome: 'skipped', reason: 'the host does not exist (deleted)' } });
    expect(await fleet.startFleetChange({ ref: gone, operation: { kind: 'delete' }, fleet: 'ts', since })).toEqual({ result: { outcome: 'succeeded' } });
  });

  it("a fleet's watch queries no host whose operation runs, though its history moves, and reads the result once it ends", async () => {
    const ref = { namespace: 'fleet-ts', name: 'watched' };
    const put = await t.put(ref, { automatedCleaningMode: 'disabled' });
    await t.until(ref, 'available', idle);
    t.fixture.script('cleanNode', { kind: 'hang' }, { host: ref.name, times: 1 });
    const clean = { ref, operation: { kind: 'clean' as const, steps: [{ name: 'erase-metadata' }] }, fleet: 'ts-watch', since: new Date().toISOString() };
    expect(await fleet.startFleetChange(clean)).toEqual({ sent: true });
    await t.until(ref, 'cleaning', () => t.fixture.calls(ref.name).some((c) => c.activity === 'cleanNode' && c.result === 'hanging'));

    const before = (await t.handle(ref).describe()).historyLength;
    reads.queries = 0;
    reads.describes = 0;
    reads.lists = 0;
    const watching = fleet.awaitFleetHost({ ...clean, windowMs: 3000 });
    // The host's history moves while its clean runs (its spec applied again, unchanged): looks see a new mark each time.
    for (let i = 0; i < 3; i++) {
      await t.handle(ref).executeUpdate(applySpecUpdate, { args: [put.spec!] });
      await new Promise((r) => setTimeout(r, 600));
    }
    expect(await watching).toEqual({ waiting: 'preparing' });
    expect((await t.handle(ref).describe()).historyLength).toBeGreaterThan(before);
    // One look each: a visibility list, and a describe where the list shows nothing (the test server's lists are empty).
    expect(reads.lists).toBeGreaterThanOrEqual(3);
    expect(reads.queries).toBe(0);

    // The clean ends: the look after its operation is no longer named queries once and finds it done.
    expect(t.fixture.release(ref.name, 'cleanNode')).toBe(1);
    expect(await fleet.awaitFleetHost({ ...clean, windowMs: 60_000 })).toEqual({ result: { outcome: 'succeeded' } });
    expect(reads.queries).toBeGreaterThanOrEqual(1);
    expect(reads.queries).toBeLessThanOrEqual(2);
  });
});
