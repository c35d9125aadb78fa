/**
 * The host workflow's own timing logic at production values, on Temporal's
 * time-skipping test server with the fixture provisioner
 * (test/support/host-time-skipping.ts): the backoff and retry limit of a failed
 * deploy. Tier 0: no stack. What Ironic does with each request is tier 1's
 * (docs/testing.md, "What runs in which tier").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAILURE } from '../../model/failures';
import type { Image } from '../../model/host';
import { DEFAULT_HOST_OPTIONS, type HostView } from '../../contracts/host';
import { DEFAULT_MAX_PROVISIONING_RETRIES } from '../../workflows/host/rules/provisioning-retries';
import { startHostTimeSkipping, timeSkippingUnavailable, type HostTimeSkipping } from '../support/host-time-skipping';

const unavailable = timeSkippingUnavailable();
const IMAGE: Image = { url: 'http://images.example/fails.qcow2', checksum: 'c'.repeat(64), checksumType: 'sha256', format: 'qcow2' };
const kinds = (v: HostView): string[] => v.operations.map((o) => `${o.kind}:${o.outcome}`);
const idleIn = (state: string) => (v: HostView) => v.status.provisioning.state === state && v.currentOperation === undefined;

let t: HostTimeSkipping;
beforeAll(async () => {
  if (unavailable) return;
  t = await startHostTimeSkipping();
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
});
