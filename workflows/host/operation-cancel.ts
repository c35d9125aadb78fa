/**
 * Cancelling an operation that drives Ironic: the host cancels the child
 * workflow (a delete, a pause, a new desired state), the activity waiting on
 * Ironic stops, and Ironic is then asked to stop as well before the child
 * reports the cancellation, so the host's next step finds the node at rest.
 */
import { CancellationScope, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { SettleActivities } from '../../activities/ironic/settle';
import { ACTIVITY_OPTIONS } from '../common/activity-options';
import type { OperationInput } from './operation-types';

const settle = proxyActivities<SettleActivities>(ACTIVITY_OPTIONS.ironicSettle);

export async function abortingOnCancel<T>(input: OperationInput, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (!isCancellation(err) || !input.nodeId) throw err;
    const nodeId = input.nodeId;
    // The cancellation is already delivered: this scope must not be cancelled with it.
    await CancellationScope.nonCancellable(() => settle.settleNode({ ref: input.ref, nodeId }));
    throw err;
  }
}
