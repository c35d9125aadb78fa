/**
 * The provisioning limiter with its production timers, on Temporal's
 * time-skipping test server: a holder that ended without giving its permit
 * back loses it at the limiter's next check (60 s), and an idle limiter ends
 * itself after 10 minutes, each in a few seconds of real time. Tier 0: no stack.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { REPO_ROOT } from '../../config/env';
import { createLimiterActivities } from '../../activities/limiter/activities';
import { limiterViewQuery, limiterWorkflowId } from '../../contracts/limiter';
import { timeSkippingEnv, timeSkippingUnavailable } from '../support/time-skipping';
import { waitFor } from '../support/harness';

const unavailable = timeSkippingUnavailable();
const TASK_QUEUE = 'limiter-time-skipping';

describe.skipIf(unavailable !== undefined)(`the provisioning limiter's timers${unavailable ? ` (skipped: ${unavailable})` : ''}`, () => {
  let env: TestWorkflowEnvironment | undefined;
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  beforeAll(async () => {
    env = await timeSkippingEnv();
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: TASK_QUEUE,
      workflowsPath: join(REPO_ROOT, 'test', 'support', 'limiter-probe-workflows.ts'),
      activities: createLimiterActivities({ limit: 1, client: env.client }),
    });
    running = worker.run();
  }, 120_000);
  afterAll(async () => {
    worker?.shutdown();
    await running;
    await env?.teardown();
  });

  it('takes back the permit of a holder that ended without it after its 60 s check, and ends itself 10 minutes after the last release', async () => {
    const e = env!;
    const run = Date.now().toString(36);
    const start = (id: string, mode: 'release' | 'leave') => e.client.workflow.start('permitProbeWorkflow', { taskQueue: TASK_QUEUE, workflowId: `${id}-${run}`, args: [mode] });
    const gone = await start('gone-holder', 'leave');
    const grantedGone = Date.parse(await gone.result());
    const waiter = await start('waiter', 'release');
    // Time is skipped only while a client waits on a result: not before the waiter's request is queued (its local
    // activity runs in the worker, which the server does not see), or the server would skip past it.
    const limiter = e.client.workflow.getHandle(limiterWorkflowId(TASK_QUEUE));
    await waitFor('the waiter queued', async () => ((await limiter.query(limiterViewQuery)).queue.some((r) => r.workflowId === waiter.workflowId) ? true : undefined));
    const grantedWaiter = Date.parse(await waiter.result());
    // Nothing released the first permit: only the limiter's check (every 60 s while hosts wait) found its run closed.
    expect(grantedWaiter - grantedGone).toBeGreaterThanOrEqual(60_000);
    expect(grantedWaiter - grantedGone).toBeLessThan(10 * 60_000);

    const view = await limiter.query(limiterViewQuery);
    expect(view.queue).toEqual([]);
    await limiter.result();
    // Idle for its 10 minutes of workflow time, which the server skipped.
    const closed = (await limiter.describe()).closeTime!.getTime();
    expect(closed - grantedWaiter).toBeGreaterThanOrEqual(10 * 60_000);
  }, 120_000);
});
