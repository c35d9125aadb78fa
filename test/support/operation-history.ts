/**
 * The history events of one host operation: the host run's activity events
 * whose summary names it (`<seq>-<kind>: <activity>`), with the events that
 * ended them.
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { HostRef } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import type { OperationRecord } from '../../contracts/host';

type Event = temporal.api.history.v1.IHistoryEvent;

export async function operationEvents(client: Client, ref: HostRef, op: OperationRecord): Promise<Event[]> {
  const events = (await client.workflow.getHandle(hostWorkflowId(ref)).fetchHistory()).events ?? [];
  const prefix = `${op.seq}-${op.kind}: `;
  const ours = new Set<string>();
  return events.filter((e) => {
    const summary = e.userMetadata?.summary;
    if (e.activityTaskScheduledEventAttributes && summary && String(defaultPayloadConverter.fromPayload(summary)).startsWith(prefix)) {
      ours.add(String(e.eventId));
      return true;
    }
    const ended =
      e.activityTaskStartedEventAttributes ??
      e.activityTaskCompletedEventAttributes ??
      e.activityTaskFailedEventAttributes ??
      e.activityTaskCanceledEventAttributes ??
      e.activityTaskTimedOutEventAttributes ??
      e.activityTaskCancelRequestedEventAttributes;
    return ended !== undefined && ended !== null && ours.has(String(ended.scheduledEventId));
  });
}

/** The summaries of the local activities one host operation ran (their markers carry the operation's label), in order. */
export async function operationLocalActivities(client: Client, ref: HostRef, op: OperationRecord): Promise<string[]> {
  const events = (await client.workflow.getHandle(hostWorkflowId(ref)).fetchHistory()).events ?? [];
  const prefix = `${op.seq}-${op.kind}: `;
  return events
    .map((e) => (e.markerRecordedEventAttributes && e.userMetadata?.summary ? String(defaultPayloadConverter.fromPayload(e.userMetadata.summary)) : undefined))
    .filter((s): s is string => s !== undefined && s.startsWith(prefix));
}

/**
 * How many times a host ran operations of `kind`, over every run of its workflow (distinct
 * `<seq>-<kind>` activity summaries).
 */
export async function operationRuns(client: Client, ref: HostRef, kind: string): Promise<number> {
  const id = hostWorkflowId(ref);
  const labels = new Set<string>();
  for await (const run of client.workflow.list({ query: `WorkflowId = '${id}'` })) {
    for (const e of (await client.workflow.getHandle(id, run.runId).fetchHistory()).events ?? []) {
      const summary = e.activityTaskScheduledEventAttributes && e.userMetadata?.summary;
      if (!summary) continue;
      const label = String(defaultPayloadConverter.fromPayload(summary)).split(':')[0]!;
      // Runs after a re-adoption start their operation numbers again: the run tells them apart.
      if (label.endsWith(`-${kind}`)) labels.add(`${run.runId} ${label}`);
    }
  }
  return labels.size;
}
