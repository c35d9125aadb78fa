/**
 * The `clean` operation: a manual clean's named steps,
 * in order, each one Ironic manual clean of its own, so the Temporal UI
 * shows each step as its own activity (`<seq>-clean: cleanNode <step>`) and
 * a failure names the step Ironic failed. Runs inside the host workflow, in
 * `preparing`; the node is left `manageable` for `prepare` (which leaves it so
 * until provisioning).
 *
 * The `service` operation runs the same named steps on a
 * provisioned host, each one Ironic service (`<seq>-service: serviceNode <step>`),
 * the node staying `active`.
 */
import { CancellationScope, CancelledFailure, proxyActivities } from '@temporalio/workflow';
import { ACTIVITY_OPTIONS } from '../../common/activity-options';
import type { IronicActivities } from '../../../activities/ironic/activities';
import { required } from '../operation-common';
import { abortingOnCancel } from '../operation-cancel';
import { operationLabel } from '../operation-label';
import type { OperationInput, OperationOutcome } from '../operation-types';

/** Waits on Ironic, heartbeating; a cancelled wait has stopped before the node is settled (operation-cancel.ts). */
const OPTIONS = ACTIVITY_OPTIONS.ironicWaitCancellable;
const stepping = proxyActivities<Pick<IronicActivities, 'cleanNode' | 'serviceNode'>>(OPTIONS);

/** `progress` hears each step's name as it starts (the host's record and current details show it). */
export async function cleanOperation(input: OperationInput, progress?: (step: string) => void): Promise<OperationOutcome> {
  return namedSteps(input, 'cleanNode', 'clean', progress);
}

/** A provisioned host's steps through Ironic's servicing (only runs with an update policy service). */
export async function serviceOperation(input: OperationInput, progress?: (step: string) => void): Promise<OperationOutcome> {
  return namedSteps(input, 'serviceNode', 'service', progress);
}

async function namedSteps(
  input: OperationInput,
  activity: 'cleanNode' | 'serviceNode',
  kind: 'clean' | 'service',
  progress?: (step: string) => void,
): Promise<OperationOutcome> {
  const nodeId = required(input.nodeId, 'a node');
  const { steps } = required(input.clean, `${kind} steps`);
  const label = operationLabel() ?? kind;
  return abortingOnCancel(input, async () => {
    let poweredOn: boolean | undefined;
    const ran: string[] = [];
    for (const step of steps) {
      // A step that finished after the host cancelled the clean (withdrawn, paused, deleted) is the last one.
      if (CancellationScope.current().consideredCancelled) throw new CancelledFailure(`the ${kind} was cancelled before step ${step.name}`);
      progress?.(step.name);
      const node = await stepping[activity].executeWithOptions(
        { ...OPTIONS, summary: `${label}: ${activity} ${step.name}` },
        [{ ref: input.ref, nodeId, step }],
      );
      poweredOn = node.poweredOn;
      ran.push(node.skipped ? `${step.name} skipped (${node.skipped})` : step.name);
    }
    return { ...(poweredOn !== undefined ? { poweredOn } : {}), note: `${kind} steps: ${ran.join(', ')}` };
  });
}
