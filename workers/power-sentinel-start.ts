/**
 * Starts the task queue's power sentinel (workflows/power/power-sentinel.ts) unless
 * METALFLOW_POWER_SENTINEL_SECONDS is 0: every worker asks, the first start
 * wins and the others find it running (one sentinel per task queue). With 0
 * the worker cancels a sentinel still running from before (it is on by
 * default, so "off" must stop the one the last start left running).
 */
import { Client, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type DataConverter } from '@temporalio/client';
import { connectTemporalClient, type TemporalConnectionSettings } from '../clients/temporal/connection';
import { powerSentinelWorkflowId, type PowerSentinelWorkflow } from '../contracts/power-sentinel';

interface SentinelTarget {
  connection: TemporalConnectionSettings;
  namespace: string;
  taskQueue: string;
  dataConverter?: DataConverter;
}

/** A client for one call at worker start, closed after it. */
async function withClient<T>(opts: SentinelTarget, use: (client: Client) => Promise<T>): Promise<T> {
  const connection = await connectTemporalClient(opts.connection);
  try {
    return await use(new Client({ connection, namespace: opts.namespace, ...(opts.dataConverter ? { dataConverter: opts.dataConverter } : {}) }));
  } finally {
    await connection.close();
  }
}

export async function startPowerSentinel(opts: SentinelTarget & { intervalSeconds: number }): Promise<string> {
  const workflowId = powerSentinelWorkflowId(opts.taskQueue);
  return withClient(opts, async (client) => {
    try {
      await client.workflow.start<PowerSentinelWorkflow>('powerSentinelWorkflow', {
        workflowId,
        taskQueue: opts.taskQueue,
        args: [{ intervalSeconds: opts.intervalSeconds }],
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
    return workflowId;
  });
}

/** Cancels the task queue's running sentinel; true when one was running. */
export async function stopPowerSentinel(opts: SentinelTarget): Promise<boolean> {
  return withClient(opts, async (client) => {
    const handle = client.workflow.getHandle(powerSentinelWorkflowId(opts.taskQueue));
    try {
      if ((await handle.describe()).status.name !== 'RUNNING') return false;
      await handle.cancel();
      return true;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  });
}
