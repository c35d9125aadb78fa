/**
 * Test-only workflows that put a secret where the history check must find it
 * (test/integration/history-secrets.test.ts). The input carries a token, and
 * the secret is derived from it (the token reversed), so the secret is only
 * where a place plants it, never in the input by accident.
 */
import {
  ApplicationFailure,
  condition,
  continueAsNew,
  defineSignal,
  defineUpdate,
  executeChild,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { PlantedActivities } from './activities';

export type Place =
  | 'none'
  | 'workflow-input'
  | 'activity-input'
  | 'activity-result'
  | 'heartbeat'
  | 'activity-failure'
  | 'workflow-failure'
  | 'child-input'
  | 'continue-as-new'
  | 'search-attribute'
  | 'update'
  | 'signal';

export interface PlantInput {
  place: Place;
  token: string;
  /** Set only when `place` is workflow-input (or on the run after continue-as-new). */
  carried?: string;
}

export const secretOf = (token: string): string => [...token].reverse().join('');

export const plantedUpdate = defineUpdate<string, [string]>('planted');
export const plantedSignal = defineSignal<[string]>('planted');
export const finishUpdate = defineUpdate<void>('finish');

const quick = proxyActivities<PlantedActivities>({ startToCloseTimeout: '30 seconds', retry: { maximumAttempts: 1 } });
const heartbeating = proxyActivities<PlantedActivities>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: '2 seconds',
  retry: { maximumAttempts: 1 },
});

export async function plantedChild(_secret: string): Promise<string> {
  return 'ok';
}

export async function plantSecret(input: PlantInput): Promise<string> {
  const secret = secretOf(input.token);
  let finished = false;
  setHandler(plantedUpdate, () => 'received');
  setHandler(plantedSignal, () => undefined);
  setHandler(finishUpdate, () => {
    finished = true;
  });
  switch (input.place) {
    case 'activity-input':
      await quick.echoLength(secret);
      break;
    case 'activity-result':
      await quick.reveal(input.token);
      break;
    case 'heartbeat':
      // Heartbeats the secret, then stops: the timeout failure records the last details.
      await heartbeating.heartbeatThenStall(input.token).catch(() => undefined);
      break;
    case 'activity-failure':
      await quick.failWith(input.token).catch(() => undefined);
      break;
    case 'workflow-failure':
      throw ApplicationFailure.create({ message: `failed: ${secret}`, details: [secret], nonRetryable: true });
    case 'child-input':
      await executeChild(plantedChild, { args: [secret], workflowId: `${input.token}-child` });
      break;
    case 'continue-as-new':
      if (input.carried === undefined) await continueAsNew<typeof plantSecret>({ ...input, carried: secret });
      break;
    case 'search-attribute':
      upsertSearchAttributes({ MetalflowHostName: [secret] });
      break;
    case 'update':
    case 'signal':
      // The client sends the secret; the run waits until it is told to end.
      await condition(() => finished);
      break;
    default:
      break;
  }
  return 'done';
}
