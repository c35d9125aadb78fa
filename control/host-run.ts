/**
 * Whether a host's workflow runs, and bringing back a host whose workflow
 * ended without deleting it. The host workflow returns only once a delete is
 * done, so COMPLETED is the one ending that means "deleted"; a terminated,
 * failed, timed-out or cancelled run left the host (and its Ironic node)
 * behind, and forgetting it would orphan the node or, on a re-create,
 * register and inspect a provisioned machine from nothing.
 */
import { WithStartWorkflowOperation, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client, type WorkflowExecutionStatusName } from '@temporalio/client';
import { HostStatusSchema, type HostRef, type HostSpec, type HostStatus } from '../model/host';
import { fitStrings } from '../model/fit-schema';
import { metal3StatusAsGoReads } from '../model/metal3-status';
import { schemaErrors } from '../model/validate';
import { formatFieldErrors } from '../model/field-error';
import { hostWorkflowId } from '../model/host-ref';
import { hostListItem } from './host-list';
import {
  applyDirectivesUpdate,
  applySpecUpdate,
  deleteHostUpdate,
  hostViewQuery,
  powerRequestsUpdate,
  restoreStatusUpdate,
  type HostDirectives,
  type HostView,
  type HostWorkflowOptions,
} from '../contracts/host';
import type { HostWorkflow } from '../contracts/host';

export type HostRun =
  | { kind: 'running' }
  /** No workflow by that id (never created, or past Temporal's retention). */
  | { kind: 'absent' }
  /** The workflow completed: a delete finished, the host is gone. */
  | { kind: 'deleted' }
  /** The workflow ended any other way: the host still exists and must be re-adopted. */
  | { kind: 'ended'; status: WorkflowExecutionStatusName; closedAt?: Date };

export async function hostRun(client: Client, ref: HostRef): Promise<HostRun> {
  return (await markedHostRun(client, ref)).run;
}

/**
 * The host's run and a mark that changes whenever its history does (run id,
 * history length, status): a host workflow's view is derived from its history
 * alone, so an unchanged mark means an unchanged view. A describe is a read of
 * the server's mutable state; a query is a workflow task on a worker (a replay
 * when the host is not cached): watchers describe, and query only on a new mark.
 * `operation`: the operation the run's search attributes name as running ('' when
 * none, or no run runs), as current as the mark; `state`: the provisioning state
 * they name ('' when none).
 */
export async function markedHostRun(client: Client, ref: HostRef): Promise<{ run: HostRun; mark: string; operation: string; state: string }> {
  try {
    const d = await client.workflow.getHandle(hostWorkflowId(ref)).describe();
    const mark = `${d.runId}:${d.historyLength}:${d.status.name}`;
    switch (d.status.name) {
      // Describe without a run id reads the newest run: continued-as-new only in a race, the new run runs.
      case 'RUNNING':
      case 'CONTINUED_AS_NEW': {
        const item = d.status.name === 'RUNNING' ? hostListItem(d.searchAttributes) : undefined;
        return { run: { kind: 'running' }, mark, operation: item?.operation ?? '', state: item?.provisioningState ?? '' };
      }
      case 'COMPLETED':
        return { run: { kind: 'deleted' }, mark, operation: '', state: '' };
      default:
        return { run: { kind: 'ended', status: d.status.name, closedAt: d.closeTime }, mark, operation: '', state: '' };
    }
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { run: { kind: 'absent' }, mark: 'absent', operation: '', state: '' };
    throw err;
  }
}

/** A waiter's look at a host (idleHostView): the view only when it was read. */
export interface IdleLook {
  run: HostRun;
  mark: string;
  /** The operation running, as the search attributes name it; '' when none. */
  operation: string;
  view?: HostView;
}

/**
 * For a waiter whose goal needs no operation running (a pivot's frozen or
 * detached host, a fleet abort, a remediation's power wait): the running host's
 * view, queried only when its search attributes name no operation running and
 * its history moved since the mark `seen` (else the answer could only be "not
 * yet"). Every query is a workflow task on the host's worker, and one answered
 * while a local activity's result waits there makes the history unreplayable
 * (docs/adr/0006-local-activity-heartbeat.md): a waiter that queried at each
 * poll asked a host in flight dozens of times. An operation whose outcome is
 * recorded is no longer named while its run winds down: the query still shows
 * it as `currentOperation`, so the search attributes only ever spare a query.
 */
export async function idleHostView(client: Client, ref: HostRef, seen?: string): Promise<IdleLook> {
  const look = await markedHostRun(client, ref);
  if (look.run.kind !== 'running' || look.operation !== '' || look.mark === seen) return look;
  return { ...look, view: await client.workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery) };
}

/**
 * The host as its last run left it. A closed run still answers queries (a
 * worker replays its history), so nothing is copied anywhere new: the status
 * and spec hold references to Secrets, never their values.
 */
export function lastHostView(client: Client, ref: HostRef): Promise<HostView> {
  return client.workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery);
}

/**
 * The Temporal UI's summary and details of a host's run: names only (they are payloads the codec
 * encrypts, but a summary is read by everyone who opens the UI). Set at start only: the SDK's
 * continue-as-new sends no user metadata, so the live state is in the search attributes and each
 * run's current details (workflows/host/ui-details.ts).
 */
export function hostRunMetadata(ref: HostRef): { staticSummary: string; staticDetails: string } {
  return {
    staticSummary: `host ${ref.namespace}/${ref.name}`,
    staticDetails:
      `BareMetalHost **${ref.namespace}/${ref.name}**. Its provisioning state, power, running operation and error are ` +
      'the search attributes MetalflowProvisioningState, MetalflowPoweredOn, MetalflowOperation and MetalflowErrorType, ' +
      'and this run\'s current details; the whole view: the `host` query.',
  };
}

/** Update-with-start of a host workflow: starts it when none runs, else updates the running one. */
export function hostWorkflowStart(
  ref: HostRef,
  taskQueue: string,
  options: Partial<HostWorkflowOptions> | undefined,
  uid?: string,
): WithStartWorkflowOperation<HostWorkflow> {
  return new WithStartWorkflowOperation<HostWorkflow>('hostWorkflow', {
    workflowId: hostWorkflowId(ref),
    taskQueue,
    args: [{ ref, options, ...(uid ? { uid } : {}) }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    ...hostRunMetadata(ref),
  });
}

export interface ReadoptInput {
  ref: HostRef;
  taskQueue: string;
  options: Partial<HostWorkflowOptions> | undefined;
  /** The last known status: the ended run's, or (Kubernetes) the object's. */
  status: HostStatus;
  spec?: HostSpec;
  /** Kubernetes mode: sent before the spec, so a detached host is not attached again first. */
  directives?: HostDirectives;
  /** Keyed power-off requests to keep (API mode; the controller re-sends its annotations). */
  holds?: Record<string, 'soft' | 'hard'>;
  /** The API host's labels. */
  labels?: Record<string, string>;
  /** The ended run had been asked to delete the host: ask the new one. */
  deleteRequested?: boolean;
  /** The API host's uid (the config drive's meta_data.uuid), kept by the new run. */
  uid?: string;
}

/**
 * Starts a new run that takes the last known status the way Metal3's status
 * annotation does (restoreStatus): the host registers with Ironic again,
 * finding its node by stored id or name, and a provisioned node is adopted as
 * it is: no inspection, no deploy. The status goes first: until a spec
 * arrives the new run does nothing.
 */
export async function readoptHost(client: Client, input: ReadoptInput): Promise<{ restored: boolean; reason?: string }> {
  const { ref } = input;
  // A status Metal3's operator wrote (nulls, `image: {url: ""}`) reads as its Go code reads it; the
  // restore validator holds a status to the schema's limits, and what the old run observed may be longer.
  const status = fitStrings(HostStatusSchema, metal3StatusAsGoReads(input.status) as HostStatus);
  // Checked before anything starts: a run started beside a refused status would register the host from scratch.
  const problems = schemaErrors(HostStatusSchema, status, 'status');
  if (problems.length > 0) throw new ReadoptRefused(ref, formatFieldErrors(problems));
  const startWorkflowOperation = hostWorkflowStart(ref, input.taskQueue, input.options, input.uid);
  let result: { restored: boolean; reason?: string };
  try {
    result = await client.workflow.executeUpdateWithStart(restoreStatusUpdate, { args: [status], startWorkflowOperation });
  } catch (err) {
    if (!(err instanceof WorkflowUpdateFailedError)) throw err;
    // The start went through before the update was refused: end that empty run, so no spec reaches it.
    const started = await startWorkflowOperation.workflowHandle().catch(() => undefined);
    await started?.terminate(`the status to re-adopt from was refused: ${err.cause?.message ?? err.message}`).catch(() => undefined);
    throw new ReadoptRefused(ref, err.cause?.message ?? err.message);
  }
  const handle = client.workflow.getHandle(hostWorkflowId(ref));
  if (input.directives) await handle.executeUpdate(applyDirectivesUpdate, { args: [input.directives] });
  if (input.spec) await handle.executeUpdate(applySpecUpdate, { args: input.labels ? [input.spec, { labels: input.labels }] : [input.spec] });
  if (input.spec && input.holds && Object.keys(input.holds).length > 0) {
    await handle.executeUpdate(powerRequestsUpdate, { args: [{ holdOff: input.holds }] });
  }
  if (input.deleteRequested) await handle.executeUpdate(deleteHostUpdate);
  return result;
}

/** The host workflow refused the status a host was to be re-adopted from; nothing was left running. */
export class ReadoptRefused extends Error {
  constructor(
    ref: HostRef,
    readonly reason: string,
  ) {
    super(`${ref.namespace}/${ref.name}: not re-adopted, its status is refused (${reason}); no workflow was left running, nothing was registered`);
    this.name = 'ReadoptRefused';
  }
}

/** The log line / Event message for a re-adoption. */
export function readoptMessage(run: Extract<HostRun, { kind: 'ended' | 'absent' }>, status: HostStatus, source: string): string {
  const node = status.provisioning.ID ? `, Ironic node ${status.provisioning.ID}` : '';
  const what =
    run.kind === 'absent'
      ? 'the host workflow is gone from Temporal (no run by its id)'
      : `the host workflow ended abnormally (${run.status}${run.closedAt ? ` at ${run.closedAt.toISOString()}` : ''})`;
  return `${what}; re-adopted from ${source} (provisioning state ${status.provisioning.state || 'unmanaged'}${node})`;
}
