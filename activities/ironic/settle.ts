/**
 * What is left to do in Ironic after the host cancelled an operation: the
 * cancelled activity stops waiting, but Ironic would go on deploying,
 * cleaning or inspecting. Ask it to stop where its state machine allows
 * (`abort` from a wait state), otherwise let the step end on its own, and
 * report the state the node came to rest in.
 */
import type { HostRef } from '../../model/host';
import { IronicError, type IronicClient } from '../../clients/ironic/client';
import { TRANSITIONAL_STATES } from '../../clients/ironic/types';
import { activityContext, DEFAULT_POLL, heartbeat, poller, type PollOptions } from '../common/activity-context';

/** Wait states Ironic's `abort` leaves (to the matching failed state). */
export const ABORTABLE_STATES: ReadonlySet<string> = new Set([
  'wait call-back',
  'deploy hold',
  'clean wait',
  'clean hold',
  'inspect wait',
  'service wait',
  'service hold',
  'rescue wait',
]);

export interface SettleResult {
  /** Where the node rests ('' when it no longer exists). */
  provisionState: string;
  aborted: boolean;
  /** Ironic refused the abort in this state (e.g. a deploy wait before API 1.110): it ended on its own timeout. */
  refused?: string;
}

export function createSettleActivities(deps: { ironic: IronicClient; poll?: PollOptions }) {
  const { ironic } = deps;
  async function settleNode(input: { ref: HostRef; nodeId: string }): Promise<SettleResult> {
    const previous = activityContext()?.info.heartbeatDetails as Partial<SettleResult> | undefined;
    let aborted = previous?.aborted === true;
    let refused = previous?.refused;
    const polling = poller(deps.poll ?? DEFAULT_POLL);
    for (;;) {
      const node = await ironic.getNode(input.nodeId);
      if (!node) return { provisionState: '', aborted };
      if (!aborted && refused === undefined && ABORTABLE_STATES.has(node.provision_state)) {
        try {
          await ironic.abortProvisioning(node.uuid);
          aborted = true;
          heartbeat({ aborted });
          polling.reset();
          continue;
        } catch (err) {
          if (!(err instanceof IronicError) || (err.kind !== 'rejected' && err.kind !== 'conflict')) throw err;
          // Locked (conflict): try again on the next turn. Refused: nothing else will stop it.
          if (err.kind === 'rejected') refused = err.message;
        }
      }
      if (!TRANSITIONAL_STATES.has(node.provision_state)) return { provisionState: node.provision_state, aborted, ...(refused ? { refused } : {}) };
      await polling.wait({ aborted, refused });
    }
  }
  return { settleNode };
}

export type SettleActivities = ReturnType<typeof createSettleActivities>;
