/**
 * Durable "sent" records on the Ironic node itself. Heartbeat details reach
 * the server at most every few seconds, so a worker killed right after Ironic
 * accepted a verb could lose the record and send it again (a second deploy
 * after a fast failure, a second reboot). Before a verb is sent, the node's
 * `extra.metalflow_sent` names the attempt's operation and the verb with the
 * node's provision state as it was: a later attempt of the same operation
 * that finds the marker and a changed state knows the verb was carried out.
 *
 * A marker may also announce the verb the activity sends next from the state
 * the first one leads to (`then`: a deploy's `active` after its `provide`),
 * so that verb needs no PATCH of its own: the node in a state only that verb
 * leads to (THEN_STATES), since the marker was written, says it was sent.
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
  /** The verb this activity sends next once `verb` is done, without a marker of its own (one of THEN_STATES' keys). */
  then?: ThenVerb;
}

/**
 * The verbs a marker may announce, each with the provision states only it leads a node to from where the marked verb
 * left it: `active` from `available` (deploying, the agent's wait, and how a deploy ends). Nothing else moves a node
 * there from `available`, so a node found in one of them since the marker was written was deployed by this activity.
 */
export const THEN_STATES = {
  active: ['deploying', 'wait call-back', 'deploy hold', 'deploy failed', 'active'],
} as const satisfies Record<string, readonly string[]>;

export type ThenVerb = keyof typeof THEN_STATES;

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
  // A `then` this version does not know is not trusted: its verb is marked on its own before it is sent.
  if (m.then !== undefined && !Object.hasOwn(THEN_STATES, m.then)) return { key: m.key, verb: m.verb, before: m.before };
  return m as SentMarker;
}

/**
 * Whether the verb a marker announced (`then`) was sent: the node left the marker's moment and is in a state only
 * that verb leads to. (A node in `available` again after it was deployed has been torn down by someone else, whose
 * own marker replaced this one: as for any marked verb, the marker is not there to say so.)
 */
export function announcedVerbSent(node: IronicNode, marker: SentMarker): boolean {
  if (!marker.then || marker.before === provisionMoment(node)) return false;
  return (THEN_STATES[marker.then] as readonly string[]).includes(node.provision_state);
}

/** The PATCH op that writes the marker (sent with the fields the verb needs: ironic-node-driver.ts). */
export const markerOp = (marker: SentMarker): JsonPatchOp => ({ op: 'add', path: `/extra/${SENT_MARKER}`, value: marker });

export async function writeMarker(ironic: IronicClient, nodeId: string, marker: SentMarker): Promise<void> {
  await ironic.patchNode(nodeId, [markerOp(marker)]);
}
