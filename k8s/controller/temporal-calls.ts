/**
 * Counts the controller's calls to Temporal by kind and name, as
 * `metalflow_controller_temporal_calls_total{call,name}`: a workflow start
 * is history, an update is history, a query is a workflow task on a worker (a
 * replay when the host is not cached). What an idle fleet costs Temporal is
 * read here, not guessed.
 */
import type { WorkflowClientInterceptor } from '@temporalio/client';
import { Counter, type Registry } from 'prom-client';

export type TemporalCall = 'start' | 'update' | 'updateWithStart' | 'query' | 'describe' | 'signal';

export function temporalCallCounter(registry: Registry): { interceptor: WorkflowClientInterceptor; counter: Counter<'call' | 'name'> } {
  const counter = new Counter({
    name: 'metalflow_controller_temporal_calls_total',
    help: 'Calls the controller made to Temporal, by kind (start, update, updateWithStart, query, describe, signal) and workflow, update or query name',
    labelNames: ['call', 'name'] as const,
    registers: [registry],
  });
  const count = (call: TemporalCall, name: string) => counter.inc({ call, name });
  const interceptor: WorkflowClientInterceptor = {
    startWithDetails: (input, next) => (count('start', input.workflowType), next(input)),
    startUpdate: (input, next) => (count('update', input.updateName), next(input)),
    startUpdateWithStart: (input, next) => (count('updateWithStart', input.updateName), next(input)),
    query: (input, next) => (count('query', input.queryType), next(input)),
    describe: (input, next) => (count('describe', ''), next(input)),
    signal: (input, next) => (count('signal', input.signalName), next(input)),
  };
  return { interceptor, counter };
}
