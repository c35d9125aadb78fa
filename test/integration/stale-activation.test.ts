/**
 * The minimal reproduction attempt behind the host workflow's counted hand-over (docs/adr/0003-counted-hand-over.md,
 * workflows/common/history-count.ts): workflows read `workflowInfo().historyLength` as each timer fires, while
 * clients query them. A fire applied in an activation of its own (a query reaching the cached workflow between
 * the fire and the workflow task carrying it) reads the previous task's length, an older one; the task itself,
 * and a replay, read the task's own. The figure is printed; what must hold either way: no fire ever reads a
 * length newer than its task's, and without queries every fire reads its task's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import type { temporal } from '@temporalio/proto';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import { startHarness, uniq, type Harness } from '../support/harness';
import { roundsQuery, type staleProbeWorkflow } from '../support/stale-probe-workflows';

const EventType = (await import('@temporalio/proto')).temporal.api.enums.v1.EventType;
let h: Harness;

beforeAll(async () => {
  const { code } = await bundleWorkflowCode({
    ...WORKFLOW_BUNDLE_OPTIONS,
    workflowsPath: fileURLToPath(new URL('../support/stale-probe-workflows.ts', import.meta.url)),
    logger: new DefaultLogger('WARN'),
  });
  h = await startHarness({ workflowCode: code });
});

afterAll(async () => {
  await h?.close();
});

/** For each timer fire, the history length of the workflow task that carried it (its WorkflowTaskStarted event id). */
function taskLengths(events: temporal.api.history.v1.IHistoryEvent[]): number[] {
  const lengths: number[] = [];
  let waiting = 0;
  for (const e of events) {
    if (e.eventType === EventType.EVENT_TYPE_TIMER_FIRED) waiting += 1;
    if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED && waiting > 0) {
      for (; waiting > 0; waiting--) lengths.push(Number(e.eventId));
    }
  }
  return lengths;
}

/** Runs `probes` probes at once, each with `queriers` clients querying it for as long as it runs; the fires whose live length differs from their task's. */
async function probe(queriers: number, probes = 6): Promise<{ rounds: number; stale: number; newer: number }> {
  const runs = await Promise.all(Array.from({ length: probes }, () => probeOne(queriers)));
  const sum = (k: 'rounds' | 'stale' | 'newer'): number => runs.reduce((n, r) => n + r[k], 0);
  return { rounds: sum('rounds'), stale: sum('stale'), newer: sum('newer') };
}

async function probeOne(queriers: number): Promise<{ rounds: number; stale: number; newer: number }> {
  const rounds = 20;
  const handle = await h.client.workflow.start<typeof staleProbeWorkflow>('staleProbeWorkflow', { taskQueue: h.taskQueue, workflowId: uniq('stale-probe'), args: [rounds, 10] });
  let done = false;
  const result = handle.result().finally(() => {
    done = true;
  });
  const loops = Array.from({ length: queriers }, async () => {
    while (!done) await handle.query(roundsQuery).catch(() => undefined);
  });
  const seen = await result;
  await Promise.all(loops);
  const history = await handle.fetchHistory();
  const expected = taskLengths(history.events ?? []);
  expect(expected).toHaveLength(rounds);
  return { rounds, stale: seen.filter((len, i) => len < (expected[i] ?? 0)).length, newer: seen.filter((len, i) => len > (expected[i] ?? 0)).length };
}

describe('stale activations (SDK and server as shipped)', () => {
  it('without queries, every fire reads its own task\'s history length', async () => {
    const { stale, newer } = await probe(0);
    expect({ stale, newer }).toEqual({ stale: 0, newer: 0 });
  }, 600_000);

  it('with queries arriving while timers fire, a fire never reads a newer length than its task (stale ones printed)', async () => {
    const { rounds, stale, newer } = await probe(4);
    console.log(`stale activations: ${stale} of ${rounds} timer fires read an older length than their task's`);
    expect(newer).toBe(0);
  }, 600_000);
});
