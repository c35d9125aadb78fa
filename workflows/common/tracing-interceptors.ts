/**
 * The workflow interceptors of a traced worker (workers/worker.ts TRACED_WORKFLOW_BUNDLE_OPTIONS),
 * built on Temporal's OpenTelemetry ones (their tracer, sink exporter and trace header) but adding
 * no promise step anywhere: each call returns the very promise the SDK's own `next` returned, and
 * the span ends beside it. Temporal's interceptors are async functions (and add an `await` for
 * histories without their SDK flags): each adds microtask steps to a handler's or an activity's
 * completion, and a host workflow's commands (an update's completion, its next activity) follow
 * that order. Every run an untraced worker recorded failed to replay on a traced worker with them
 * (test/unit/replay-baseline.test.ts); with these, a traced worker issues the same commands in
 * the same order as an untraced one, so tracing can be turned on and off under running hosts.
 */
import { context, SpanKind, SpanStatusCode, trace, type Context, type Link, type Tracer } from '@opentelemetry/api';
import { OpenTelemetryInboundInterceptor, OpenTelemetryInternalsInterceptor, SPAN_DELIMITER, SpanName } from '@temporalio/interceptors-opentelemetry/lib/workflow';
import { extractContextFromHeaders, headersWithContext, RUN_ID_ATTR_KEY, TRACE_HEADER, WORKFLOW_ID_ATTR_KEY } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import {
  ContinueAsNew,
  workflowInfo,
  type ActivityInput,
  type ContinueAsNewInput,
  type LocalActivityInput,
  type Next,
  type SignalInput,
  type SignalWorkflowInput,
  type StartChildWorkflowExecutionInput,
  type UpdateInput,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptors,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';

/** The SDK's workflow tracer (its provider exports through the worker's sink), taken from its inbound interceptor. */
class TracerSource extends OpenTelemetryInboundInterceptor {
  get shared(): Tracer {
    return this.tracer;
  }
}
let tracer: Tracer | undefined;
const workflowTracer = (): Tracer => (tracer ??= new TracerSource().shared);

const failed = (err: unknown): boolean => !(err instanceof ContinueAsNew);

/**
 * Runs `run` with a new span (child of `parent`) active and returns `run`'s own promise: the span ends when it
 * settles, on a reaction of its own that nothing waits on.
 */
function traced<T>(name: string, parent: Context, run: () => Promise<T>, links: Link[] = []): Promise<T> {
  // The workflow's id on every span: a backend's search by it finds a host's traces.
  const { workflowId, runId } = workflowInfo();
  const span = workflowTracer().startSpan(name, { kind: SpanKind.INTERNAL, links, attributes: { [WORKFLOW_ID_ATTR_KEY]: workflowId, [RUN_ID_ATTR_KEY]: runId } }, parent);
  const end = (err?: unknown) => {
    if (err !== undefined && failed(err)) span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    span.end();
  };
  let result: Promise<T>;
  try {
    result = context.with(trace.setSpan(parent, span), run);
  } catch (err) {
    end(err);
    throw err;
  }
  result.then(
    () => end(),
    (err: unknown) => end(err ?? 'failed'),
  );
  return result;
}

type Headers = Parameters<typeof extractContextFromHeaders>[0];
const fromHeaders = (input: { headers: Headers }): Context => extractContextFromHeaders(input.headers) ?? context.active();

/**
 * A continue-as-new starts a new trace, linked to the run before: a host's runs last until their history is
 * full (weeks at rest), and one trace for all of them would grow for as long as the host exists.
 */
const LINK_HEADER = 'metalflow-trace-link';
const linkHeaders = (headers: Headers): Headers => {
  const withContext = headersWithContext({});
  const { [TRACE_HEADER]: dropped, ...rest } = headers;
  void dropped;
  return withContext[TRACE_HEADER] ? { ...rest, [LINK_HEADER]: withContext[TRACE_HEADER] } : rest;
};
const linksOf = (headers: Headers): Link[] => {
  const previous = headers[LINK_HEADER] ? extractContextFromHeaders({ [TRACE_HEADER]: headers[LINK_HEADER] }) : undefined;
  const spanContext = previous ? trace.getSpanContext(previous) : undefined;
  return spanContext ? [{ context: spanContext }] : [];
};
const name = (kind: SpanName, what: string): string => `${kind}${SPAN_DELIMITER}${what}`;

const inbound: WorkflowInboundCallsInterceptor = {
  execute: (input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>) =>
    traced(name(SpanName.WORKFLOW_EXECUTE, workflowInfo().workflowType), fromHeaders(input), () => next(input), linksOf(input.headers)),
  handleSignal: (input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>) =>
    traced(name(SpanName.WORKFLOW_HANDLE_SIGNAL, input.signalName), fromHeaders(input), () => next(input)),
  handleUpdate: (input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>) =>
    traced(name(SpanName.WORKFLOW_HANDLE_UPDATE, input.name), fromHeaders(input), () => next(input)),
};

/** Each outbound call carries the new span in its headers, so the activity or child run continues the trace. */
const outbound: WorkflowOutboundCallsInterceptor = {
  scheduleActivity: (input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) =>
    traced(name(SpanName.ACTIVITY_START, input.activityType), context.active(), () => next({ ...input, headers: headersWithContext(input.headers) })),
  scheduleLocalActivity: (input: LocalActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>) =>
    traced(name(SpanName.ACTIVITY_START, input.activityType), context.active(), () => next({ ...input, headers: headersWithContext(input.headers) })),
  startChildWorkflowExecution: (input: StartChildWorkflowExecutionInput, next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>) =>
    traced(name(SpanName.CHILD_WORKFLOW_START, input.workflowType), context.active(), () => next({ ...input, headers: headersWithContext(input.headers) })),
  continueAsNew: (input: ContinueAsNewInput, next: Next<WorkflowOutboundCallsInterceptor, 'continueAsNew'>) =>
    traced(name(SpanName.CONTINUE_AS_NEW, input.options.workflowType ?? workflowInfo().workflowType), context.active(), () => next({ ...input, headers: linkHeaders(input.headers) })),
  signalWorkflow: (input: SignalWorkflowInput, next: Next<WorkflowOutboundCallsInterceptor, 'signalWorkflow'>) =>
    traced(name(SpanName.WORKFLOW_SIGNAL, input.signalName), context.active(), () => next({ ...input, headers: headersWithContext(input.headers) })),
};

export const interceptors = (): WorkflowInterceptors => {
  // Before any call: registers the workflow's tracer provider and context manager (the SDK's, through its sink).
  workflowTracer();
  return {
  inbound: [inbound],
  outbound: [outbound],
  // Disables the SDK's workflow context manager when the workflow leaves the cache.
  internals: [new OpenTelemetryInternalsInterceptor()],
  };
};
