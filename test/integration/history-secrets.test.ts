/**
 * The secret check (bench/support/history-secrets.ts) is shown to catch a
 * secret planted in each place Temporal keeps data: a check that cannot fail
 * proves nothing. Runs test-only workflows on the real dev server.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import { TEMPORAL_ADDRESS } from '../support/env';
import { uniq } from '../support/harness';
import { secretsInHistories } from '../../bench/support/history-secrets';
import { plantedActivities } from '../support/planted/activities';
import { finishUpdate, plantedSignal, plantedUpdate, plantSecret, secretOf, type Place } from '../support/planted/workflows';

let env: TestWorkflowEnvironment;
let client: Client;
let worker: Worker;
let running: Promise<void>;
const taskQueue = uniq('planted');

beforeAll(async () => {
  env = await TestWorkflowEnvironment.createFromExistingServer({ address: TEMPORAL_ADDRESS, namespace: 'default' });
  client = env.client;
  worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowsPath: fileURLToPath(new URL('../support/planted/workflows.ts', import.meta.url)),
    activities: plantedActivities,
  });
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await env?.teardown();
});

/** Runs the planted workflow for one place; returns its id and the secret it was given to plant. */
async function plant(place: Place): Promise<{ workflowId: string; secret: string }> {
  const token = `tok${randomBytes(6).toString('hex')}`;
  const secret = secretOf(token);
  const workflowId = uniq(`planted-${place}`);
  const handle = await client.workflow.start(plantSecret, {
    taskQueue,
    workflowId,
    args: [{ place, token, ...(place === 'workflow-input' ? { carried: secret } : {}) }],
  });
  if (place === 'update') await handle.executeUpdate(plantedUpdate, { args: [secret] });
  if (place === 'signal') await handle.signal(plantedSignal, secret);
  if (place === 'update' || place === 'signal') await handle.executeUpdate(finishUpdate);
  await handle.result().catch(() => undefined);
  return { workflowId, secret };
}

const PLACES: { place: Place; where: RegExp }[] = [
  { place: 'workflow-input', where: /workflowExecutionStartedEventAttributes\.input/ },
  { place: 'activity-input', where: /activityTaskScheduledEventAttributes\.input/ },
  { place: 'activity-result', where: /activityTaskCompletedEventAttributes\.result/ },
  { place: 'heartbeat', where: /timeoutFailureInfo\.lastHeartbeatDetails/ },
  { place: 'activity-failure', where: /activityTaskFailedEventAttributes\.failure/ },
  { place: 'workflow-failure', where: /workflowExecutionFailedEventAttributes\.failure/ },
  { place: 'child-input', where: /startChildWorkflowExecutionInitiatedEventAttributes\.input|planted-child-input.*workflowExecutionStartedEventAttributes\.input/ },
  { place: 'continue-as-new', where: /workflowExecutionContinuedAsNewEventAttributes\.input/ },
  { place: 'search-attribute', where: /searchAttributes/ },
  { place: 'update', where: /workflowExecutionUpdateAcceptedEventAttributes\.acceptedRequest\.input\.args|workflowExecutionUpdate/ },
  { place: 'signal', where: /workflowExecutionSignaledEventAttributes\.input/ },
];

describe('the decoded history secret check', () => {
  it('finds nothing in a run that planted nothing', async () => {
    const { workflowId, secret } = await plant('none');
    const { hits, texts } = await secretsInHistories(client, [workflowId], [secret]);
    expect(hits).toEqual([]);
    // It did read the history: the decoded input is there (the token, not the secret).
    expect(texts.some((t) => t.where.includes('workflowExecutionStartedEventAttributes.input') && t.text.includes('"place":"none"'))).toBe(true);
  });

  it.each(PLACES)('catches a secret planted in $place', async ({ place, where }) => {
    const { workflowId, secret } = await plant(place);
    const { hits } = await secretsInHistories(client, [workflowId], [secret]);
    expect(hits.length, `no hit for ${place}`).toBeGreaterThan(0);
    expect(hits.map((h) => h.where).join('\n')).toMatch(where);
  });

  it('would have missed them with JSON.stringify of the raw history (the old check)', async () => {
    const { workflowId, secret } = await plant('activity-input');
    const raw = JSON.stringify(await client.workflow.getHandle(workflowId).fetchHistory());
    expect(raw).not.toContain(secret);
  });
});
