/**
 * The provisioning limiter's I/O (workflows/limiter/provisioning-limiter.ts): asking
 * for a permit starts the limiter if it is not running (signal-with-start,
 * which a workflow cannot do itself), and the limiter asks which holders'
 * runs have closed. Both go through the worker's own Temporal client.
 */
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { acquirePermitSignal, limiterWorkflowId, type PermitRequest } from '../../contracts/limiter';

export function createLimiterActivities(deps: { limit: number; checkSeconds?: number; client?: Client }) {
  const client = (): Client => deps.client ?? Context.current().client;
  return {
    /** Queues the request with the task queue's limiter; `unlimited` (METALFLOW_PROVISIONING_LIMIT=0): go ahead, nothing to give back. */
    async requestProvisioningPermit(req: PermitRequest): Promise<{ unlimited: boolean }> {
      if (deps.limit === 0) return { unlimited: true };
      const { taskQueue } = Context.current().info;
      await client().workflow.signalWithStart('provisioningLimiterWorkflow', {
        workflowId: limiterWorkflowId(taskQueue),
        taskQueue,
        args: [{ limit: deps.limit, ...(deps.checkSeconds ? { checkSeconds: deps.checkSeconds } : {}) }],
        signal: acquirePermitSignal,
        signalArgs: [{ ...req, limit: deps.limit }],
      });
      return { unlimited: false };
    },

    /** The request ids whose run is no longer open (ended, terminated, timed out, or unknown to Temporal). */
    async closedPermitHolders(holders: { requestId: string; workflowId: string; runId: string }[]): Promise<string[]> {
      const closed: string[] = [];
      for (const h of holders) {
        try {
          const d = await client().workflow.getHandle(h.workflowId, h.runId).describe();
          if (d.status.name !== 'RUNNING') closed.push(h.requestId);
        } catch (err) {
          if ((err as { name?: string }).name === 'WorkflowNotFoundError') closed.push(h.requestId);
          else throw err;
        }
      }
      return closed;
    },
  };
}

export type LimiterActivities = ReturnType<typeof createLimiterActivities>;
