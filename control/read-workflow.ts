/**
 * A short read run as a workflow (a firmware read, a site's node health list):
 * readers of one thing at the same time share one run (USE_EXISTING); a
 * finished run's id is free for the next read. The caller reads its failure.
 */
import type { Client } from '@temporalio/client';

export async function runReadWorkflow<T>(client: Client, workflowType: string, taskQueue: string, workflowId: string, args: unknown[]): Promise<T> {
  const handle = await client.workflow.start(workflowType, {
    taskQueue,
    workflowId,
    args,
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    workflowExecutionTimeout: '5 minutes',
  });
  return (await handle.result()) as T;
}
