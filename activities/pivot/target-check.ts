/**
 * Whether the target plane can take a host now, asked of the plane itself: a
 * worker polls its task queue, and that worker, running the plane check
 * (workflows/pivot/plane-check.ts), says its Ironic answers with a live conductor.
 * A reason to skip the host, or undefined. Changes nothing anywhere.
 */
import { WorkflowFailedError, type Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { planeCheckWorkflowId, type PlaneReport, type PlaneCheckWorkflow } from '../../contracts/pivot';

/** Under the pivot's heartbeat timeout (1 minute): the check's run gives up first. */
const CHECK_SECONDS = 45;

const causeOf = (err: WorkflowFailedError): string => {
  let e: unknown = err.cause;
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  return e instanceof Error ? e.message : String(err.message);
};

export async function targetPlaneProblem(c: Client, taskQueue: string, pivot: string): Promise<string | undefined> {
  const answer = await c.workflowService.describeTaskQueue({
    namespace: c.options.namespace,
    taskQueue: { name: taskQueue },
    taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  if ((answer.pollers ?? []).length === 0) return `no worker polls the target's task queue ${taskQueue}`;
  // One check at a time per pivot: the hosts pre-checked together share its answer.
  const handle = await c.workflow.start<PlaneCheckWorkflow>('planeCheckWorkflow', {
    taskQueue,
    workflowId: planeCheckWorkflowId(pivot),
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowExecutionTimeout: `${CHECK_SECONDS} seconds`,
  });
  let report: PlaneReport;
  try {
    report = await handle.result();
  } catch (err) {
    if (!(err instanceof WorkflowFailedError)) throw err;
    if (err.cause?.name === 'TimeoutFailure' || /timed out/i.test(err.message)) {
      return `the target's worker on task queue ${taskQueue} did not answer the plane check within ${CHECK_SECONDS} s`;
    }
    return `the target's Ironic cannot be used: ${causeOf(err)}`;
  }
  if (report.ironic.conductors.length === 0) return `the target's Ironic (API ${report.ironic.apiVersion}) has no live conductor`;
  return undefined;
}
