/**
 * Starts the task queue's power sentinel (workflows/power-sentinel.ts) unless
 * METALFLOW_POWER_SENTINEL_SECONDS is 0: every worker asks, the first start
 * wins and the others find it running (one sentinel per task queue).
 */
import { Client, WorkflowExecutionAlreadyStartedError, type DataConverter } from '@temporalio/client';
import { connectTemporalClient, type TemporalConnectionSettings } from '../clients/temporal/connection';
import { powerSentinelWorkflowId, type powerSentinelWorkflow } from '../workflows/power-sentinel';

export async function startPowerSentinel(opts: {
  connection: TemporalConnectionSettings;
  namespace: string;
  taskQueue: string;
  intervalSeconds: number;
  dataConverter?: DataConverter;
}): Promise<string> {
  const connection = await connectTemporalClient(opts.connection);
  try {
    const client = new Client({ connection, namespace: opts.namespace, ...(opts.dataConverter ? { dataConverter: opts.dataConverter } : {}) });
    const workflowId = powerSentinelWorkflowId(opts.taskQueue);
    try {
      await client.workflow.start<typeof powerSentinelWorkflow>('powerSentinelWorkflow', {
        workflowId,
        taskQueue: opts.taskQueue,
        args: [{ intervalSeconds: opts.intervalSeconds }],
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
    return workflowId;
  } finally {
    await connection.close();
  }
}
