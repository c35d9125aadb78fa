/**
 * The Temporal SDK's OpenTelemetry interceptors, wired to a process's tracing
 * (clients/telemetry/tracing.ts). The client's start, update and signal spans
 * carry the caller's trace context into the workflow's headers; the worker's
 * workflow interceptors (a module of the workflow bundle) pass it on to every
 * activity, whose span is the parent of the activity's HTTP requests.
 */
import { createRequire } from 'node:module';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { Tracing } from '../telemetry/tracing';

/**
 * The SDK's interceptors package (and the OpenTelemetry SDK it loads) is loaded by the first traced process that
 * asks for an interceptor, not by every worker and controller that imports this module with tracing off: a
 * synchronous require of the CommonJS package, as clients/telemetry/tracing.ts loads the SDK.
 */
const interceptors = (): typeof import('@temporalio/interceptors-opentelemetry') =>
  createRequire(import.meta.url)('@temporalio/interceptors-opentelemetry') as typeof import('@temporalio/interceptors-opentelemetry');

/** What a bundle holds when it was built with TRACING_WORKFLOW_MODULE (the name of the tracer it creates). */
export const TRACING_BUNDLE_MARK = '@temporalio/interceptor-workflow';

export function tracingClientInterceptors(tracing: Tracing): { workflow: WorkflowClientInterceptor[] } {
  return { workflow: [new (interceptors().OpenTelemetryWorkflowClientInterceptor)({ tracer: tracing.tracer })] };
}

export function tracingActivityInterceptors(tracing: Tracing): ActivityInterceptorsFactory {
  const { OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor } = interceptors();
  return (ctx) => ({
    inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer: tracing.tracer }),
    outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
  });
}

/** The sink the workflow interceptors export their spans through (they cannot do I/O in the workflow sandbox). */
export function tracingSinks(tracing: Tracing): InjectedSinks<Record<string, never>> {
  return { exporter: interceptors().makeWorkflowExporter(tracing.spanProcessor, tracing.resource) } as unknown as InjectedSinks<Record<string, never>>;
}
