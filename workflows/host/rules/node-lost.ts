/**
 * Ironic lost the host's node: Metal3's default Ironic keeps its database in
 * ephemeral SQLite, so a restarted Ironic pod knows no node at all. The host
 * does not fail for it (BMO re-registers on its next reconcile): it notices
 * (an operation's activity reports the typed `IronicNodeGone`, or the power
 * check finds no node under the stored id), registers again where it stands
 * (a provisioned host's new node is adopted with its image, never deployed
 * again, see decide()) and then carries on with whatever it was doing.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import { FAILURE } from '../../../model/failures';
import type { HostEvent } from '../../../model/host-event';
import type { HostState } from '../../../contracts/host';

/** Whether an operation failed because Ironic no longer has the host's node (anywhere in its cause chain). */
export function nodeGoneIn(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof ApplicationFailure && e.type === FAILURE.nodeGone) return true;
  }
  return false;
}

/** Records that the node is gone; the next decision registers the host again. Returns the Event saying so. */
export function markNodeLost(s: HostState, why: string, at: string): HostEvent {
  const state = s.status.provisioning.state;
  s.nodeLost = { nodeId: s.status.provisioning.ID, at };
  const plan =
    state === 'provisioned'
      ? 'registering the host again and adopting its node as it is (no deploy)'
      : `registering the host again in provisioning state ${state || 'unmanaged'}`;
  return { type: 'Warning', reason: 'IronicNodeLost', message: `${why}; ${plan}` };
}
