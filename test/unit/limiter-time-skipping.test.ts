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
    // Time is skipped only while a client waits on a result, and then up to the next timer of any workflow. Waiting
    // on the first probe's result would let the server skip while the limiter has a holder and no queue (no timer
    // of its own): years ahead. So nothing waits on a result until the waiter is queued, and the limiter's 60 s
    // check is the next timer. A query never moves the clock.
    const limiter = e.client.workflow.getHandle(limiterWorkflowId(TASK_QUEUE));
    const listed = (part: 'holders' | 'queue', workflowId: string) => async () =>
      (await limiter.query(limiterViewQuery))[part].some((r) => r.workflowId === workflowId) ? true : undefined;
    await waitFor('the first probe holding its permit', listed('holders', gone.workflowId));
    await waitFor('the first probe closed', async () => ((await gone.describe()).status.name === 'COMPLETED' ? true : undefined));
    const waiter = await start('waiter', 'release');
    await waitFor('the waiter queued', listed('queue', waiter.workflowId));
    const grantedWaiter = Date.parse(await waiter.result());
    const grantedGone = Date.parse(await gone.result());
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
