/**
 * The plane check a pivot asks of its target (id `plane-check/<pivot>`): one
 * activity on the target plane's own worker, reporting the Ironic that worker
 * uses. That the workflow completes at all shows a worker of the current code
 * serves the task queue; its result, that its Ironic answers with a live
 * conductor. Two events of history, whatever happens.
 */
import { proxyActivities } from '@temporalio/workflow';
import { ACTIVITY_OPTIONS } from '../common/activity-options';
import type { PlaneCheckActivities } from '../../activities/pivot/plane-check';
import type { PlaneReport } from '../../contracts/pivot';

const { checkOwnPlane } = proxyActivities<PlaneCheckActivities>(ACTIVITY_OPTIONS.planeCheck);

export async function planeCheckWorkflow(): Promise<PlaneReport> {
  return checkOwnPlane();
}
