/**
 * A minimal workflow for the stale-activation reproduction (test/integration/stale-activation.test.ts):
 * it sleeps in a loop and records `workflowInfo().historyLength` as each timer's fire reaches it,
 * the value a hand-over decided by length would read.
 */
import { defineQuery, setHandler, sleep, workflowInfo } from '@temporalio/workflow';

export const roundsQuery = defineQuery<number>('rounds');

export async function staleProbeWorkflow(rounds: number, periodMs: number): Promise<number[]> {
  const seen: number[] = [];
  setHandler(roundsQuery, () => seen.length);
  for (let i = 0; i < rounds; i++) {
    await sleep(periodMs);
    seen.push(workflowInfo().historyLength);
  }
  return seen;
}
