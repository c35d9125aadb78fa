/**
 * Durable "sent" records on the Ironic node itself. Heartbeat details reach
 * the server at most every few seconds, so a worker killed right after Ironic
 * accepted a verb could lose the record and send it again (a second deploy
 * after a fast failure, a second reboot). Before a verb is sent, the node's
 * `extra.metalflow_sent` names the attempt's operation and the verb with the
 * node's provision state as it was: a later attempt of the same operation
 * that finds the marker and a changed state knows the verb was carried out.
 */
import type { IronicClient, JsonPatchOp } from '../../clients/ironic/client';
import type { IronicNode } from '../../clients/ironic/types';
import { activityContext } from '../common/activity-context';

export const SENT_MARKER = 'metalflow_sent';

export interface SentMarker {
  /** The operation's child workflow (or the host workflow's run) and the activity within it (stable across retries of one call). */
  key: string;
  verb: string;
  /** The node's provision state and its time as Ironic recorded them before the verb. */
  before: string;
}

/** This activity call's key, or undefined outside a Temporal activity (direct calls in tests). */
export function markerKey(): string | undefined {
  const info = activityContext()?.info;
  const execution = info?.workflowExecution;
  if (!info || !execution?.workflowId) return undefined;
  // An operation inside the host workflow (operations-inline): activity ids start again on each run of the
  // host (continue-as-new), so the run is part of the key. A child's workflow id is its operation's own.
  return info.workflowType === 'hostWorkflow' ? `${execution.workflowId}@${execution.runId}#${info.activityId}` : `${execution.workflowId}#${info.activityId}`;
}

export const provisionMoment = (node: IronicNode): string => `${node.provision_state}@${node.provision_updated_at ?? ''}`;

/** The verb this call marked on the node, if the marker is its own. */
export function ownMarker(node: IronicNode, key: string | undefined): SentMarker | undefined {
  const m = node.extra?.[SENT_MARKER] as Partial<SentMarker> | undefined;
  if (!key || !m || m.key !== key || typeof m.verb !== 'string' || typeof m.before !== 'string') return undefined;
  return m as SentMarker;
}

/** The PATCH op that writes the marker (sent with the fields the verb needs: ironic-node-driver.ts). */
export const markerOp = (marker: SentMarker): JsonPatchOp => ({ op: 'add', path: `/extra/${SENT_MARKER}`, value: marker });

export async function writeMarker(ironic: IronicClient, nodeId: string, marker: SentMarker): Promise<void> {
  await ironic.patchNode(nodeId, [markerOp(marker)]);
}
