/**
 * The power sentinel's loop (activities/power/sentinel.ts) against a fake
 * Ironic and a fake Temporal client, its waits recorded instead of slept: it
 * lists again a few seconds after a list that failed, sweeps in the first list
 * after Ironic answers again, and otherwise sweeps only when visibility counts
 * a resting host it does not know of.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { IronicClient } from '../../clients/ironic/client';
import { createPowerSentinelActivities, type WatchPowerResult } from '../../activities/power/sentinel';

const pauses: number[] = [];
/** The sentinel's waits, recorded instead of slept. */
const pause = (ms: number): Promise<void> => {
  pauses.push(ms);
  return Promise.resolve();
};

beforeEach(() => {
  pauses.length = 0;
});

/** A resting host as visibility lists it. */
const info = (name: string) => ({
  workflowId: `host/ns/${name}`,
  runId: 'r',
  startTime: new Date(),
  status: { name: 'RUNNING' },
  searchAttributes: { MetalflowHostNamespace: ['ns'], MetalflowHostName: [name], MetalflowProvisioningState: ['available'], MetalflowOperationalStatus: ['OK'], MetalflowSite: ['default'] },
});

function world(opts: { failures: number; resting: string[] }) {
  const calls = { lists: 0, counts: 0, visibilityLists: 0, told: [] as string[] };
  let failures = opts.failures;
  const ironic = {
    listNodeStates: async () => {
      calls.lists += 1;
      if (failures-- > 0) throw new Error('cannot reach Ironic: connect ECONNREFUSED');
      return [];
    },
  } as unknown as IronicClient;
  const client = {
    workflow: {
      count: async () => {
        calls.counts += 1;
        return { count: opts.resting.length };
      },
      list: () => {
        calls.visibilityLists += 1;
        return (async function* () {
          for (const name of opts.resting) yield info(name);
        })();
      },
      getHandle: (id: string) => ({ signal: async () => void calls.told.push(id) }),
    },
  } as unknown as Client;
  const watch = (): Promise<WatchPowerResult> =>
    new MockActivityEnvironment().run(createPowerSentinelActivities({ ironic, client, pause }).watchPowerStates, { intervalSeconds: 30, watchSeconds: 0, namespace: 'ns' });
  return { calls, watch };
}

describe('the power sentinel\'s loop', () => {
  it('lists again 2 s, then 3 s after lists that failed, and sweeps in the first list Ironic answers', async () => {
    const { calls, watch } = world({ failures: 2, resting: ['young'] });
    const result = await watch();
    expect(pauses).toEqual([2000, 3000]);
    expect(result).toMatchObject({ lists: 1, failedLists: 2, sweeps: 1, signalled: 1 });
    expect(calls.told).toEqual(['host/ns/young']);
    // The failure called for the sweep already: no count.
    expect(calls.counts).toBe(0);
  });

  it('sweeps after an empty list when visibility counts a resting host it does not know of, and not when it counts none', async () => {
    const young = world({ failures: 0, resting: ['young'] });
    expect(await young.watch()).toMatchObject({ lists: 1, failedLists: 0, sweeps: 1, signalled: 1 });
    expect(young.calls.counts).toBe(1);
    expect(young.calls.told).toEqual(['host/ns/young']);

    const none = world({ failures: 0, resting: [] });
    expect(await none.watch()).toMatchObject({ lists: 1, signalled: 0 });
    expect(none.calls.counts).toBe(1);
    expect(none.calls.visibilityLists).toBe(0);
  });
});
