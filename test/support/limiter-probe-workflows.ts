/**
 * Workflows of test/unit/limiter-time-skipping.test.ts: the real provisioning
 * limiter, and a probe that asks it for a permit as a host does (the same
 * activity, the same signals) and then gives it back or ends holding it.
 */
import { condition, getExternalWorkflowHandle, proxyLocalActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import { limiterWorkflowId, permitGrantedSignal, releasePermitSignal } from '../../contracts/limiter';
import { LOCAL_ACTIVITY_OPTIONS } from '../../workflows/common/activity-options';
import type { LimiterActivities } from '../../activities/limiter/activities';

export { provisioningLimiterWorkflow } from '../../workflows/limiter/provisioning-limiter';

// As the host asks: a local activity.
const acts = proxyLocalActivities<LimiterActivities>(LOCAL_ACTIVITY_OPTIONS.limiterRequest);

/** Asks for a permit, waits for it, then releases it (`release`) or ends holding it (`leave`, a host that closed). Returns when it got it. */
export async function permitProbeWorkflow(mode: 'release' | 'leave'): Promise<string> {
  const info = workflowInfo();
  const requestId = `${info.runId}/1`;
  let granted = false;
  setHandler(permitGrantedSignal, (s) => {
    if (s.requestId === requestId) granted = true;
  });
  await acts.requestProvisioningPermit({ requestId, workflowId: info.workflowId, runId: info.runId, state: 'provisioning', at: new Date().toISOString() });
  await condition(() => granted);
  const at = new Date().toISOString();
  if (mode === 'release') await getExternalWorkflowHandle(limiterWorkflowId(info.taskQueue)).signal(releasePermitSignal, { requestId });
  return at;
}
