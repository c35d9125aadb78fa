/** Test-only activities for the planted-secret workflows (see workflows.ts beside this file). */
import { ApplicationFailure, Context } from '@temporalio/activity';

const secretOf = (token: string): string => [...token].reverse().join('');

export const plantedActivities = {
  async echoLength(value: string): Promise<number> {
    return value.length;
  },
  async reveal(token: string): Promise<string> {
    return secretOf(token);
  },
  async heartbeatThenStall(token: string): Promise<void> {
    const ctx = Context.current();
    ctx.heartbeat(secretOf(token));
    // No more heartbeats: the server times the attempt out (2 s) with these details; this attempt just ends later.
    await ctx.sleep(8_000).catch(() => undefined);
  },
  async failWith(token: string): Promise<void> {
    const secret = secretOf(token);
    throw ApplicationFailure.create({ message: `refused: ${secret}`, details: [secret], nonRetryable: true });
  },
};

export type PlantedActivities = typeof plantedActivities;
