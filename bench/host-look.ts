/**
 * The benchmark's look at its hosts: one Temporal visibility list per tick.
 *
 * The driver used to take three lists per tick (GET /v1/hosts, which lists the
 * running host workflows and the abnormally ended ones, plus one list of the
 * running operation children). A perf profile of the dev server during a
 * 1,000-host run (docs/benchmarks.md) put a third of its CPU in
 * ListWorkflowExecutions, most of it decoding the rows' search attributes:
 * the instrument, not metalflow, and it ran on through the idle windows.
 *
 * Now one list, of the rows that can tell a host still waiting something: its
 * workflow once it is in the target state (for "gone", while it still runs:
 * absent is gone), named with `WorkflowId IN (…)` so the hosts already
 * recorded cost nothing, plus any running operation child of the run (hosts
 * started before patch operations-inline had them; a host with one running is
 * not there yet). The API driver has at most `concurrency` hosts waiting, so a
 * look returns at most that many rows, most looks a handful.
 */
import type { Client } from '@temporalio/client';
import { hostListItem } from '../control/host-list';
import { hostWorkflowId } from '../model/host-ref';
import { SEARCH_ATTRIBUTES } from '../model/search-attributes';

export type LookTarget = string | 'gone';

export interface HostLook {
  /** Host name -> provisioning state, for the listed host workflows. */
  states: Map<string, string>;
  /** Hosts with an operation child running. */
  busy: Set<string>;
}

/** Hosts named per list request: a long IN list is one query string (about 27 characters a host). */
export const LOOK_CHUNK = 500;

/**
 * The visibility query of one look at `waiting` (host names of the run's namespace; the names and
 * the state are the run's own, never free text).
 */
export function hostLookQuery(namespace: string, target: LookTarget, waiting: readonly string[]): string {
  const ids = waiting.map((name) => `"${hostWorkflowId({ namespace, name })}"`).join(', ');
  const hosts = target === 'gone' ? `WorkflowId IN (${ids})` : `WorkflowId IN (${ids}) AND ${SEARCH_ATTRIBUTES.provisioningState.name} = "${target}"`;
  return `ExecutionStatus = "Running" AND ((${hosts}) OR (WorkflowId STARTS_WITH "host/${namespace}/" AND WorkflowType != "hostWorkflow"))`;
}

/** Sorts a listed workflow into the look: `host/<ns>/<name>` is the host, `host/<ns>/<name>/<op>` an operation of it. */
export function addToLook(look: HostLook, workflowId: string, searchAttributes: Record<string, unknown> | undefined): void {
  const [, , name, op] = workflowId.split('/');
  if (!name) return;
  if (op) {
    look.busy.add(name);
    return;
  }
  look.states.set(name, hostListItem(searchAttributes).provisioningState);
}

export async function lookAtHosts(client: Client, namespace: string, target: LookTarget, waiting: readonly string[]): Promise<HostLook> {
  const look: HostLook = { states: new Map(), busy: new Set() };
  for (let i = 0; i < waiting.length; i += LOOK_CHUNK) {
    const query = hostLookQuery(namespace, target, waiting.slice(i, i + LOOK_CHUNK));
    for await (const wf of client.workflow.list({ query })) addToLook(look, wf.workflowId, wf.searchAttributes);
  }
  return look;
}

/**
 * Host workflows of the run that ended other than completed (deleted) or continued as new: the
 * old look (the API's list) kept showing such a host, so it never counted as gone; one list
 * after each phase keeps that guarantee.
 */
export async function abnormallyEndedHosts(client: Client, namespace: string): Promise<string[]> {
  const query = [
    `WorkflowId STARTS_WITH "host/${namespace}/"`,
    `WorkflowType = "hostWorkflow"`,
    ...['Running', 'Completed', 'ContinuedAsNew'].map((s) => `ExecutionStatus != "${s}"`),
  ].join(' AND ');
  const out: string[] = [];
  for await (const wf of client.workflow.list({ query })) out.push(`${wf.workflowId.split('/')[2]} (${wf.status.name})`);
  return out;
}
