/**
 * Workflows of test/unit/limiter-time-skipping.test.ts: the real provisioning
 * limiter, and a probe that asks it for a permit as a host does (the same
 * activity, the same signals) and then gives it back or ends holding it.
 */
import { condition, getExternalWorkflowHandle, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import { limiterWorkflowId, permitGrantedSignal, releasePermitSignal } from '../../contracts/limiter';
import { ACTIVITY_OPTIONS } from '../../workflows/common/activity-options';
import type { LimiterActivities } from '../../activities/limiter/activities';

export { provisioningLimiterWorkflow } from '../../workflows/limiter/provisioning-limiter';

// The host asks through a local activity; the time-skipping server does not see one running (it skipped
// ahead while one was under way on a loaded machine), so the probe asks through a regular one.
const acts = proxyActivities<LimiterActivities>(ACTIVITY_OPTIONS.limiter);

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
