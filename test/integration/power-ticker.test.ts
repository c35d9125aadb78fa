/**
 * The idle power check's clock (patch power-ticker, workflows/power-ticker.ts):
 * wakes while idle (here spec changes that start no operation) leave the
 * check's timer running instead of cancelling it and starting another, so a
 * run's timers are the run's start and its fires, nothing a pass through the
 * loop decides. The 1,000-host fleet run found hosts whose live run made one
 * pass more than its replay and so numbered its timers one further
 * (bench/findings). Real Temporal and Ironic.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from '@temporalio/worker';
import { hostWorkflowId } from '../../types/host-ref';
import type { HostSpec } from '../../types/host';
import { hostViewQuery } from '../../workflows/definitions';
import { WORKFLOW_BUNDLE_PATH } from '../support/env';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 2 } });
});
afterAll(async () => {
  await h?.close();
});

/** Each event named by its attributes field, e.g. timerFiredEventAttributes → timerFired. */
const kindOf = (e: object): string => {
  const key = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k]);
  return key ? key.replace(/EventAttributes$/, '') : '?';
};
const count = (kinds: string[], kind: string): number => kinds.filter((k) => k === kind).length;

describe('the idle power check', () => {
  it('keeps one timer through wakes: none cancelled, one started per fire, checks on each tick, and the history replays', { timeout: 240_000 }, async () => {
    const ref = { namespace: 'ticker', name: uniq('tick') };
    const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
    const spec: HostSpec = { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true };
    const credentials = { username: 'admin', password: 'pw' };
    await h.hosts.put(ref, { spec, credentials });
    const idle = await waitFor('available and idle', async () => {
      const v = await handle.query(hostViewQuery);
      return v.status.provisioning.state === 'available' && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 120_000 });

    // Five wakes while idle: each a new generation, none an operation.
    for (let i = 1; i <= 5; i++) await h.hosts.put(ref, { spec: { ...spec, description: `rack 4, change ${i}` }, credentials });
    const firedAfterWakes = count(((await handle.fetchHistory()).events ?? []).map(kindOf), 'timerFired');
    // A snapshot taken between a fire and its task would lack that fire's next timer: wait for a settled one.
    const history = await waitFor('two more ticks, the last one\'s task done', async () => {
      const snapshot = await handle.fetchHistory();
      const k = (snapshot.events ?? []).map(kindOf);
      const settled = k.slice(k.lastIndexOf('timerFired')).includes('workflowTaskCompleted');
      return count(k, 'timerFired') >= firedAfterWakes + 2 && settled ? snapshot : undefined;
    }, { timeoutMs: 60_000 });

    const view = await handle.query(hostViewQuery);
    expect(view.generation).toBe(idle.generation + 5);
    expect(view.operations.length).toBe(idle.operations.length);
    const kinds = (history.events ?? []).map(kindOf);
    expect(count(kinds, 'timerCanceled')).toBe(0);
    // The run's first timer, then one per fire: the one pending is the next tick.
    expect(count(kinds, 'timerStarted')).toBe(count(kinds, 'timerFired') + 1);
    // Each of the last two ticks (the host idle) read the power: one local-activity marker after it.
    const last = kinds.lastIndexOf('timerFired');
    const previous = kinds.lastIndexOf('timerFired', last - 1);
    expect(count(kinds.slice(previous, last), 'markerRecorded')).toBe(1);

    await expect(Worker.runReplayHistory({ workflowBundle: { codePath: WORKFLOW_BUNDLE_PATH }, replayName: ref.name }, history)).resolves.toBeUndefined();
  });
});
