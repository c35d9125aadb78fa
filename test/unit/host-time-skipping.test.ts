/**
 * The host workflow's own timing logic at production values, on Temporal's
 * time-skipping test server with the fixture provisioner
 * (test/support/host-time-skipping.ts): the backoff and retry limit of a failed
 * deploy, deletes that give up a step after their retries, operations
 * cancelled by a new desired state or a pause, a paused host's power check,
 * a host continuing as new while it waits for a provisioning permit.
 * Tier 0: no stack. What Ironic does with each request is tier 1's
 * (docs/testing.md, "What runs in which tier").
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { FAILURE } from '../../model/failures';
import type { HostRef, Image } from '../../model/host';
import { applySpecUpdate, powerRequestsUpdate, DEFAULT_HOST_OPTIONS, DELETE_RETRY_LIMIT, type HostView, type OperationRecord } from '../../contracts/host';
import { limiterViewQuery, limiterWorkflowId } from '../../contracts/limiter';
import { hostWorkflowId } from '../../model/host-ref';
import { DEFAULT_MAX_PROVISIONING_RETRIES } from '../../workflows/host/rules/provisioning-retries';
import { startHostTimeSkipping, timeSkippingUnavailable, type HostTimeSkipping } from '../support/host-time-skipping';
import { waitFor } from '../support/harness';

const unavailable = timeSkippingUnavailable();
const IMAGE: Image = { url: 'http://images.example/fails.qcow2', checksum: 'c'.repeat(64), checksumType: 'sha256', format: 'qcow2' };
const kinds = (v: HostView): string[] => v.operations.map((o) => `${o.kind}:${o.outcome}`);
const idleIn = (state: string) => (v: HostView) => v.status.provisioning.state === state && v.currentOperation === undefined;

let t: HostTimeSkipping;
beforeAll(async () => {
  if (unavailable) return;
  // No provisioning limit here (METALFLOW_PROVISIONING_LIMIT=0): the permit's own waits are the limit-1 block's, and
  // a host that continues as new while its permit's grant is on the way loses that grant on this server (a signal
  // to the workflow id reaches a closed run), which the dev server delivers to the current run.
  t = await startHostTimeSkipping({ provisioningLimit: 0 });
}, 180_000);
afterAll(async () => {
  await t?.close();
});

describe.skipIf(unavailable !== undefined)(`the host workflow's timers${unavailable ? ` (skipped: ${unavailable})` : ''}`, () => {
  it('a failed deploy deprovisions, counts, provisions again after its backoff, stops at the retry limit until the image changes', async () => {
    const ref = { namespace: 'retries', name: 'fail' };
    await t.put(ref, { automatedCleaningMode: 'disabled' });
    await t.until(ref, 'available', idleIn('available'));
    const failure = { kind: 'fail', type: FAILURE.operationFailed, message: 'deploy failed: the agent never called back (fixture)' } as const;
    // The first deploy fails; the second waits, so the host can be seen retrying; the rest fail.
    t.fixture.script('deployNode', failure, { host: ref.name, times: 1 });
    t.fixture.script('deployNode', { kind: 'hang' }, { host: ref.name, times: 1 });
    t.fixture.script('deployNode', failure, { host: ref.name });
    await t.hosts.setImage(ref, IMAGE);

    const retrying = await t.skipUntil(ref, 'the second attempt', (v) => v.currentOperation?.kind === 'provision' && v.operations.filter((o) => o.kind === 'provision').length === 2, { step: '5 seconds' });
    expect(kinds(retrying).slice(-3)).toEqual(['provision:failed', 'deprovision:succeeded', 'provision:running']);
    expect(retrying.operations.find((o) => o.kind === 'provision')?.error).toBe('deploy failed: the agent never called back (fixture)');
    expect(retrying.status.provisioningFailCount).toBe(1);
    expect(retrying.status.lastAttemptedImage).toEqual(IMAGE);
    expect(retrying.status.provisioning.state).toBe('provisioning');

    expect(t.fixture.release(ref.name, 'deployNode', failure)).toBe(1);
    const limit = DEFAULT_MAX_PROVISIONING_RETRIES;
    const stopped = await t.skipUntil(ref, 'the retry limit', (v) => v.status.errorMessage.includes('retry limit') && v.currentOperation === undefined);
    expect(stopped.status.provisioning.state).toBe('available');
    expect(stopped.status.provisioningFailCount).toBe(limit);
    expect(stopped.status.errorType).toBe('provisioning error');
    expect(stopped.status.operationalStatus).toBe('error');
    expect(stopped.status.errorMessage).toBe(`provisioning failed ${limit} times, retry limit (${limit}) reached; change image or reset provisioningFailCount to retry`);
    const provisions = stopped.operations.filter((o) => o.kind === 'provision');
    expect(provisions.map((o) => o.outcome)).toEqual(Array(limit).fill('failed'));
    expect(kinds(stopped).slice(-2)).toEqual(['provision:failed', 'deprovision:succeeded']);
    // Each failed deploy is torn down after the error backoff (workflow time, skipped by the server), and provisioned again at once.
    const ops = stopped.operations;
    for (const failed of provisions) {
      const next = ops[ops.indexOf(failed) + 1]!;
      expect(next.kind).toBe('deprovision');
      expect(Date.parse(next.startedAt) - Date.parse(failed.endedAt!)).toBeGreaterThanOrEqual(DEFAULT_HOST_OPTIONS.errorBackoffSeconds * 1000);
    }

    // It stays there: no further attempt however long it waits, nor across a nudge of the host.
    await t.skip('2 hours');
    await t.hosts.setPaused(ref, true);
    await t.hosts.setPaused(ref, false);
    await t.skip('2 hours');
    const still = await t.until(ref, 'idle again', (v) => !v.paused && v.currentOperation === undefined);
    expect(still.operations.filter((o) => o.kind === 'provision')).toHaveLength(limit);

    // Another image (its checksum type, as BMO compares the whole image spec): counted from zero and tried.
    t.fixture.clear({ host: ref.name });
    const next = { ...IMAGE, checksumType: 'auto' as const };
    await t.hosts.setImage(ref, next);
    const done = await t.skipUntil(ref, 'provisioned with the new image', idleIn('provisioned'), { step: '5 seconds' });
    expect(done.status.provisioningFailCount).toBe(0);
    expect(done.status.lastAttemptedImage).toEqual(next);
    await t.hosts.remove(ref);
    const final = await t.handle(ref).result();
    expect(kinds(final).slice(-3)).toEqual(['deprovision:succeeded', 'power:succeeded', 'delete:succeeded']);
  });

  describe('a delete that cannot clean up the host (as Metal3: the step skipped after DELETE_RETRY_LIMIT failures)', () => {
    const refused = (message: string) => ({ kind: 'fail', type: FAILURE.ironicRejected, message }) as const;
    /** The backoffs between the failures (workflow time): the error backoff, doubling. */
    const backoffsOk = (failed: OperationRecord[]) => {
      for (let i = 1; i < failed.length; i++) {
        const waited = Date.parse(failed[i]!.startedAt) - Date.parse(failed[i - 1]!.endedAt!);
        expect(waited).toBeGreaterThanOrEqual(DEFAULT_HOST_OPTIONS.errorBackoffSeconds * 1000 * 2 ** (i - 1));
      }
    };

    it('skips the power off after the retry count and deletes the node', async () => {
      const ref = { namespace: 'delete-gives-up', name: 'off' };
      await t.put(ref);
      const before = (await t.until(ref, 'available', idleIn('available'))).operations.length;
      t.fixture.script('setPower', refused('the BMC does not answer (fixture)'), { host: ref.name });
      await t.hosts.remove(ref);
      // Waiting on the result lets the server skip the backoffs (10 s, 20 s, 40 s).
      const final = await t.handle(ref).result();
      expect(final.operations.slice(before).map((o) => `${o.kind}:${o.outcome}`)).toEqual([...Array<string>(DELETE_RETRY_LIMIT + 1).fill('power:failed'), 'delete:succeeded']);
      backoffsOk(final.operations.filter((o) => o.outcome === 'failed'));
      expect(t.fixture.node(ref.name)).toBeUndefined();
    });

    it('skips deprovisioning after the retry count, then powers off and deletes', async () => {
      const ref = { namespace: 'delete-gives-up', name: 'deprovision' };
      await t.put(ref, { image: IMAGE });
      const before = (await t.until(ref, 'provisioned', idleIn('provisioned'))).operations.length;
      t.fixture.script('undeployNode', refused('cleaning is broken (fixture)'), { host: ref.name });
      await t.hosts.remove(ref);
      const final = await t.handle(ref).result();
      expect(final.operations.slice(before).map((o) => `${o.kind}:${o.outcome}`)).toEqual([
        ...Array<string>(DELETE_RETRY_LIMIT + 1).fill('deprovision:failed'),
        'power:succeeded',
        'delete:succeeded',
      ]);
      backoffsOk(final.operations.filter((o) => o.outcome === 'failed'));
      expect(t.fixture.node(ref.name)).toBeUndefined();
    });
  });

  describe('interrupting a running operation', () => {
    const lastOf = (v: HostView, kind: string) => [...v.operations].reverse().find((o) => o.kind === kind);
    /** An available host whose deploy then waits (as one waiting for an agent that never calls). */
    async function stuckDeploy(ref: HostRef): Promise<void> {
      await t.put(ref, { automatedCleaningMode: 'disabled' });
      await t.until(ref, 'available', idleIn('available'));
      t.fixture.script('deployNode', { kind: 'hang' }, { host: ref.name, times: 1 });
      await t.hosts.setImage(ref, IMAGE);
      await t.until(ref, 'its deploy waiting', (v) => v.currentOperation?.kind === 'provision' && t.fixture.calls(ref.name).some((c) => c.activity === 'deployNode' && c.result === 'hanging'));
    }

    it('removing the image cancels a stuck deploy, which is aborted, and the host deprovisions to available', async () => {
      const ref = { namespace: 'interrupt', name: 'img' };
      await stuckDeploy(ref);
      await t.hosts.setImage(ref, null);
      const back = await t.until(ref, 'available again', idleIn('available'));
      const provision = lastOf(back, 'provision');
      expect(provision?.outcome).toBe('cancelled');
      expect(provision?.cancelReason).toBe('the desired state changed');
      expect(lastOf(back, 'deprovision')?.outcome).toBe('succeeded');
      expect(back.status.errorCount).toBe(0);
      expect(back.status.provisioning.image).toBeUndefined();
      // The wait stopped before the node was settled (aborted), then torn down.
      const calls = t.fixture.calls(ref.name).map((c) => `${c.activity}:${c.result}`);
      const cancelled = calls.indexOf('deployNode:cancelled');
      expect(calls.slice(cancelled, cancelled + 3)).toEqual(['deployNode:cancelled', 'settleNode:ok', 'undeployNode:ok']);
    });

    it('pausing cancels a stuck deploy and holds everything, a delete included, until resumed', async () => {
      const ref = { namespace: 'interrupt', name: 'pause' };
      await stuckDeploy(ref);
      const paused = await t.hosts.setPaused(ref, true, 'maintenance window 42');
      expect(paused.paused?.reason).toBe('maintenance window 42');
      const idle = await t.until(ref, 'idle', (v) => v.currentOperation === undefined);
      expect(lastOf(idle, 'provision')?.outcome).toBe('cancelled');
      expect(lastOf(idle, 'provision')?.cancelReason).toBe('the host was paused (maintenance window 42)');
      expect(idle.status.errorCount).toBe(0);
      expect(t.fixture.node(ref.name)?.provisionState).toBe('deploy failed');

      // A delete is held while paused (as in Metal3), however long; resuming runs it.
      await t.hosts.remove(ref);
      await t.skip('1 hour');
      expect((await t.handle(ref).describe()).status.name).toBe('RUNNING');
      await t.hosts.setPaused(ref, false);
      const final = await t.handle(ref).result();
      expect(final.operations.map((o) => `${o.kind}:${o.outcome}`).slice(-3)).toEqual(['deprovision:succeeded', 'power:succeeded', 'delete:succeeded']);
      expect(t.fixture.node(ref.name)).toBeUndefined();
    });

    it('a paused host is not power-checked or corrected, while an unpaused one beside it is (the 5-minute check)', async () => {
      const watched = { namespace: 'interrupt', name: 'watched' };
      const held = { namespace: 'interrupt', name: 'held' };
      await Promise.all([t.put(watched), t.put(held)]);
      const on = (v: HostView) => idleIn('available')(v) && v.status.poweredOn === true;
      await Promise.all([t.until(watched, 'available and on', on), t.until(held, 'available and on', on)]);
      await t.hosts.setPaused(held, true);
      const heldBefore = await t.until(held, 'paused and idle', (v) => v.paused !== undefined && v.currentOperation === undefined);
      const reads = (ref: HostRef) => t.fixture.calls(ref.name).filter((c) => c.activity === 'readHostPower').length;
      const heldReads = reads(held);
      // Powered off behind metalflow's back, both at once.
      t.fixture.setNodePower(watched.name, false);
      t.fixture.setNodePower(held.name, false);
      const corrected = await t.skipUntil(watched, 'noticed and powered on again', (v) => v.power.lastMismatch !== undefined && v.currentOperation === undefined && v.status.poweredOn === true);
      expect(t.fixture.node(watched.name)?.poweredOn).toBe(true);
      expect(reads(watched)).toBeGreaterThan(0);
      // The check runs every 300 s: by now the paused host has had the same chances, and a few more.
      await t.skip(`${3 * DEFAULT_HOST_OPTIONS.powerCheckSeconds} seconds`);
      const stillHeld = await t.view(held);
      expect(stillHeld.power.lastMismatch).toBeUndefined();
      expect(t.fixture.node(held.name)?.poweredOn).toBe(false);
      expect(stillHeld.operations.filter((o) => o.kind === 'power')).toHaveLength(heldBefore.operations.filter((o) => o.kind === 'power').length);
      expect(reads(held)).toBe(heldReads);
      expect(corrected.operations.filter((o) => o.kind === 'power').length).toBeGreaterThan(0);

      await t.hosts.setPaused(held, false);
      await t.skipUntil(held, 'corrected once resumed', (v) => v.power.lastMismatch !== undefined && v.status.poweredOn === true && v.currentOperation === undefined);
      expect(t.fixture.node(held.name)?.poweredOn).toBe(true);
    });
  });

  describe('a long wait for a provisioning permit (a limit of 1)', () => {
    // The limiter's check at its production value (60 s); the history limit low, so a few updates make the
    // waiting host hand over to new runs.
    const MAX_HISTORY_EVENTS = 40;
    const UPDATES = 25;
    let p: HostTimeSkipping;
    beforeAll(async () => {
      p = await startHostTimeSkipping({ provisioningLimit: 1, hostOptions: { maxHistoryEvents: MAX_HISTORY_EVENTS } });
    }, 180_000);
    afterAll(async () => {
      await p?.close();
    });

    it('continues as new while waiting through many updates, keeping its place, its delayedSince and the grant', async () => {
      const holder = { namespace: 'permit', name: 'holder' };
      const waiter = { namespace: 'permit', name: 'waiter' };
      // One after the other: the test server answers two signal-with-starts of a limiter not yet running with
      // one "already started" (a real server signals the one it started), which the host's retry then waits out.
      // The clock moved meanwhile: the second host's start otherwise stood still for over a minute of real time
      // on this server (not seen on the dev server; the limiter's 60 s check is the timer that moves it).
      for (const ref of [holder, waiter]) {
        await p.put(ref);
        await p.skipUntil(ref, 'available', idleIn('available'), { step: '10 seconds' });
      }
      p.fixture.script('deployNode', { kind: 'hang' }, { host: holder.name, times: 1 });
      await p.hosts.setImage(holder, IMAGE);
      await p.until(holder, 'provisioning', (v) => v.currentOperation?.kind === 'provision');
      await p.hosts.setImage(waiter, IMAGE);
      const waiting = await p.until(waiter, 'delayed', (v) => v.status.operationalStatus === 'delayed' && v.delayed?.state === 'provisioning');
      const delayedSince = waiting.delayed!.since;
      const handle = p.handle(waiter);
      const firstRun = (await handle.describe()).runId;
      for (let i = 1; i <= UPDATES; i++) {
        const { spec } = await p.view(waiter);
        await handle.executeUpdate(applySpecUpdate, { args: [{ ...spec!, description: `update ${i} while waiting for a permit` }] });
      }
      // No time skipped here: the server holds its clock while an activity runs (the holder's deploy).

      // Still waiting, in a later run whose history stays short, with the same delayedSince.
      const v = await p.until(waiter, 'the last update in a later run', (x) => x.spec?.description === `update ${UPDATES} while waiting for a permit`);
      const d = await handle.describe();
      expect(d.runId).not.toBe(firstRun);
      expect(v.status.operationalStatus).toBe('delayed');
      expect(v.delayed).toEqual({ state: 'provisioning', since: delayedSince });
      expect(d.historyLength).toBeLessThan(MAX_HISTORY_EVENTS * 3);
      // Its place: the limiter holds the holder, and the waiter's request (the same one) in the queue, now naming its current run.
      const limiter = p.env.client.workflow.getHandle(limiterWorkflowId(p.taskQueue));
      const queued = await limiter.query(limiterViewQuery);
      expect(queued.holders.map((x) => x.workflowId)).toEqual([hostWorkflowId(holder)]);
      expect(queued.queue.map((r) => r.workflowId)).toEqual([hostWorkflowId(waiter)]);
      expect(queued.queue[0]!.runId).toBe(d.runId);
      expect(queued.queue[0]!.requestId.startsWith(`${firstRun}/`)).toBe(true);

      // The holder's deploy goes through: the permit comes to the waiter's current run, which provisions.
      expect(p.fixture.release(holder.name, 'deployNode')).toBe(1);
      const provisioned = (x: HostView) => idleIn('provisioned')(x) && x.status.operationalStatus === 'OK';
      await p.until(holder, 'provisioned', provisioned);
      const done = await p.until(waiter, 'provisioned', provisioned);
      expect(done.operations.filter((r) => r.kind === 'provision').map((r) => [r.outcome, r.delayedSince])).toEqual([['succeeded', delayedSince]]);
      // The release is a signal the host sends as its operation ends, handled in the limiter's next task.
      await waitFor('the permit given back', async () => {
        const x = await limiter.query(limiterViewQuery);
        return x.holders.length === 0 && x.queue.length === 0;
      });
    });
  });

  describe('a failing operation backing off', () => {
    const NS = 'workflows';

    it('accepts a spec that fixes a failing operation while it backs off, instead of refusing it as a conflict', async () => {
      const ref = { namespace: NS, name: 'fix' };
      const base = (await t.put(ref)).spec!;
      await t.until(ref, 'available', idleIn('available'));
      // The deploy fails as with a missing user-data Secret: the host backs off (10 s, which the clock does not reach here).
      t.fixture.script('deployNode', { kind: 'fail', type: FAILURE.secretMissing, message: `Secret ${NS}/${ref.name}-missing not found` }, { host: ref.name, times: 1 });
      await t.handle(ref).executeUpdate(applySpecUpdate, { args: [{ ...base, image: IMAGE }] });
      const failing = await t.until(ref, 'a provisioning error', (v) => v.status.errorType === 'provisioning error' && v.retryAt !== undefined);
      expect(failing.status.provisioning.state).toBe('provisioning');
      expect(failing.currentOperation).toBeUndefined();

      // Another image: accepted at once, and the host provisions it without waiting out the backoff.
      const fixed = { ...base, image: { ...IMAGE, url: 'http://images.example/b.qcow2' } };
      const result = await t.handle(ref).executeUpdate(applySpecUpdate, { args: [fixed] });
      expect(result.changed).toBe(true);
      const done = await t.until(ref, 'provisioned', idleIn('provisioned'));
      expect(done.status.provisioning.image?.url).toBe('http://images.example/b.qcow2');
      expect(done.status.operationalStatus).toBe('OK');
    });
  });
});
