/**
 * A host whose run has just continued as new is still listed while visibility has not indexed its next run
 * (control/host-list.ts): the closed record stands for it unless a later run of the same workflow is known.
 */
import { describe, expect, it } from 'vitest';
import type { WorkflowExecutionInfo } from '@temporalio/client';
import { awaitingSuccessor } from '../../control/host-list';

const record = (workflowId: string, runId: string, startedSecondsAgo: number, status: 'RUNNING' | 'CONTINUED_AS_NEW' | 'COMPLETED'): WorkflowExecutionInfo =>
  ({ workflowId, runId, startTime: new Date(Date.UTC(2026, 11, 3, 9, 0, 0) - startedSecondsAgo * 1000), status: { name: status } }) as unknown as WorkflowExecutionInfo;

describe('the record of a run that continued as new', () => {
  const closed = record('host/lab/h1', 'run-1', 600, 'CONTINUED_AS_NEW');

  it('stands for its host while no later run of the workflow is indexed', () => {
    expect(awaitingSuccessor([closed], [])).toEqual([closed]);
    // The same record listed again by the second query is not a later run.
    expect(awaitingSuccessor([closed], [closed])).toEqual([closed]);
    // Another host's run says nothing about this one.
    expect(awaitingSuccessor([closed], [record('host/lab/h2', 'run-9', 1, 'RUNNING')])).toEqual([closed]);
  });

  it('gives way to the next run, whether it runs (maybe in a state the filter left out) or has ended since', () => {
    expect(awaitingSuccessor([closed], [record('host/lab/h1', 'run-2', 2, 'RUNNING')])).toEqual([]);
    expect(awaitingSuccessor([closed], [record('host/lab/h1', 'run-2', 2, 'COMPLETED')])).toEqual([]);
  });

  it('is not given way to by an older run', () => {
    expect(awaitingSuccessor([closed], [record('host/lab/h1', 'run-0', 900, 'CONTINUED_AS_NEW')])).toEqual([closed]);
  });
});
