/**
 * Workflow interceptors of every metalflow workflow (registered with the
 * bundle: workers/worker.ts WORKFLOW_BUNDLE_OPTIONS). Labels the activities
 * of an operation running inside the host workflow with that operation, so
 * the UI shows each operation as its own step. A summary is metadata: it is
 * not part of what replay compares.
 */
import type { ActivityInput, LocalActivityInput, Next, WorkflowInterceptors, WorkflowOutboundCallsInterceptor } from '@temporalio/workflow';
import { operationLabel } from './operation-label';

const labelled = <T extends ActivityInput | LocalActivityInput>(input: T): T => {
  const label = operationLabel();
  return label && !input.options.summary ? { ...input, options: { ...input.options, summary: `${label}: ${input.activityType}` } } : input;
};

export const interceptors = (): WorkflowInterceptors => ({
  outbound: [
    {
      scheduleActivity: (input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) => next(labelled(input)),
      scheduleLocalActivity: (input: LocalActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>) => next(labelled(input)),
    },
  ],
});
