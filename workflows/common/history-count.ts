/**
 * The history events a workflow run has written, counted by the run itself:
 * interceptors.ts adds what each command and each accepted message costs.
 *
 * Why not `workflowInfo().historyLength`: a query that reaches a cached
 * workflow after its timer fired (or an activity finished) but before the task
 * that carries it has started makes the worker apply the fire in an activation
 * of its own, with the previous task's history length, time and
 * continue-as-new suggestion. A
 * replay reads the task's own values there. A hand-over decided from them
 * differs between the live run and its replay when the limit falls between
 * the two ("Continue as new workflow machine does not handle this event";
 * docs/adr/0003-counted-hand-over.md). The count is a function of what the run did, so a
 * replay reaches the same number at the same point.
 *
 * It errs high: every fire, result and message is counted as a workflow task
 * of its own, where the server often carries several in one. A run hands
 * over somewhat early, never late. Not counted: the workflow-task heartbeats
 * of a local activity running longer than ~8 s, and patch markers;
 * historyLength stays a far backstop for those.
 *
 * Module state: each workflow execution evaluates its own copy (workers/
 * worker.ts preloads only modules without state).
 */
import { workflowInfo } from '@temporalio/workflow';

/** What one workflow task costs: scheduled, started, completed. */
export const WORKFLOW_TASK_EVENTS = 3;

/** A run starts with WorkflowExecutionStarted and its first workflow task. */
let events = 1 + WORKFLOW_TASK_EVENTS;

export function countEvents(n: number): void {
  events += n;
}

export const eventsCounted = (): number => events;

/** The size of the run's input (the state handed over), for the server's size backstop (host-context.ts). */
let inputBytes = 0;

/** Called first in every host workflow run. */
export function countRunInput(input: unknown): void {
  inputBytes = sizeOf(input);
}

export const runInputBytes = (): number => inputBytes;

/**
 * What one event costs in history beside its payloads (ids, times, the worker's identity, the task
 * queue); a little more than the server's own records, so the estimate errs high as the count does.
 */
export const EVENT_BYTES = 160;

/** Payload bytes the run wrote (inputs, results, update arguments and results, failures), its own input aside. */
let payloadBytes = 0;

/** A payload's size as its JSON: a function of what the run holds, the same live and on replay. */
export function sizeOf(value: unknown): number {
  if (value === undefined) return 0;
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return 0;
  }
}

export function countBytes(n: number): void {
  payloadBytes += n;
}

/** A failure's size in history: its messages along the causes, and its stack traces (estimated: their text may differ by worker). */
export function failureSize(err: unknown): number {
  let n = 0;
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) n += e.message.length + 1024;
  return n;
}

/** The history this run wrote since it started, in bytes, estimated by the run itself (its input is not counted). */
export const bytesCounted = (): number => payloadBytes + events * EVENT_BYTES;

/** Past `max` by the run's own count; the server's length only as a far backstop (for what is not counted). */
export const countedPast = (max: number): boolean => events > max || workflowInfo().historyLength > 2 * max;
