/**
 * The benchmark's look at its hosts: one Temporal visibility list per tick.
 *
 * The driver used to take three lists per tick (GET /v1/hosts, which lists the
 * running host workflows and the abnormally ended ones, plus one list of the
 * running operation children). A perf profile of the dev server during a
 * 1,000-host run (README *Benchmark*) put a third of its CPU in
 * ListWorkflowExecutions, most of it decoding the rows' search attributes:
 * the instrument, not metalflow, and it ran on through the idle windows.
 *
 * Now one list: the run's running workflows (`host/<ns>/…`) that can tell the
 * waiting hosts something, i.e. the operation children (a host with one
 * running is not there yet) and, for a state target, only the host workflows
 * already in that state (for "gone", every running host workflow: absent is
 * gone). The rows shrink to what the phase can still learn from.
 */
import type { Client } from '@temporalio/client';
import { SEARCH_ATTRIBUTES } from '../types/search-attributes';

export type LookTarget = string | 'gone';

export interface HostLook {
  /** Host name -> provisioning state, for the listed host workflows. */
  states: Map<string, string>;
  /** Hosts with an operation child running. */
  busy: Set<string>;
}

/** The visibility query of one look (namespace and state are the run's own names, never free text). */
export function hostLookQuery(namespace: string, target: LookTarget): string {
  const clauses = [`WorkflowId STARTS_WITH "host/${namespace}/"`, `ExecutionStatus = "Running"`];
  if (target !== 'gone') clauses.push(`(WorkflowType != "hostWorkflow" OR ${SEARCH_ATTRIBUTES.provisioningState.name} = "${target}")`);
  return clauses.join(' AND ');
}

/** Sorts a listed workflow into the look: `host/<ns>/<name>` is the host, `host/<ns>/<name>/<op>` an operation of it. */
export function addToLook(look: HostLook, workflowId: string, searchAttributes: Record<string, unknown> | undefined): void {
  const [, , name, op] = workflowId.split('/');
  if (!name) return;
  if (op) {
    look.busy.add(name);
    return;
  }
  const state = searchAttributes?.[SEARCH_ATTRIBUTES.provisioningState.name];
  look.states.set(name, Array.isArray(state) && typeof state[0] === 'string' ? state[0] : '');
}

export async function lookAtHosts(client: Client, namespace: string, target: LookTarget): Promise<HostLook> {
  const look: HostLook = { states: new Map(), busy: new Set() };
  for await (const wf of client.workflow.list({ query: hostLookQuery(namespace, target) })) addToLook(look, wf.workflowId, wf.searchAttributes);
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
