/**
 * OpenTelemetry tracing of one process, exported over OTLP (http/protobuf):
 * a tracer provider registered as the process's global one, W3C trace
 * context, async-local context (so a span started around an activity is the
 * parent of the HTTP requests it makes), and a client span per undici
 * request (the one HTTP layer the Ironic, Redfish and image clients share).
 * Off unless an endpoint is given (docs/observability.md).
 *
 * No secret reaches a span: no header or body is recorded, a URL keeps no
 * user information and its query only the parameter names (an image URL's
 * query may be a signature).
 */
import { createRequire } from 'node:module';
import { context, propagation, SpanStatusCode, trace, type Attributes, type Tracer } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';

/**
 * The SDK's packages are loaded when tracing starts, not with this module: every worker, controller and API
 * process imports it, most with tracing off, and loading the exporter, the SDK and the undici instrumentation
 * cost a process's start about 0.3 CPU-s (docs/testing.md, "How long it takes"). They are CommonJS packages,
 * so a synchronous require keeps startTracing synchronous; the instance is the one a static import would get.
 */
const load = createRequire(import.meta.url);

export interface TracingOptions {
  /** The collector's OTLP/HTTP base URL (`http://127.0.0.1:4318`); `/v1/traces` is added unless the path already names it. */
  endpoint: string;
  /** `service.name` of every span this process exports (metalflow-api, metalflow-worker, metalflow-controller). */
  serviceName: string;
  /** How long spans wait to be sent in a batch (the SDK's 5 s by default; tests shorten it). */
  scheduledDelayMs?: number;
}

export interface Tracing {
  readonly tracer: Tracer;
  readonly resource: Resource;
  /** Where the worker's workflow spans go too (the Temporal interceptors' sink). */
  readonly spanProcessor: SpanProcessor;
  /** Where spans are sent, without any user information the endpoint held. */
  readonly endpoint: string;
  /** Sends what is buffered. */
  flush(): Promise<void>;
  /** Sends what is buffered and stops. */
  shutdown(): Promise<void>;
}

/** The traces URL of an OTLP/HTTP endpoint given as a base (the OTEL_EXPORTER_OTLP_ENDPOINT convention) or in full. */
export function tracesUrl(endpoint: string): string {
  const url = new URL(endpoint);
  if (!/\/v1\/traces\/?$/.test(url.pathname)) url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/traces`;
  return url.toString();
}

/** A URL as a span may hold it: no user information, query parameter names only. */
export function spanSafeUrl(raw: string | URL): string {
  const url = new URL(raw.toString());
  url.username = '';
  url.password = '';
  const names = [...new Set([...url.searchParams.keys()])];
  url.search = names.length ? `?${names.map((n) => `${encodeURIComponent(n)}=REDACTED`).join('&')}` : '';
  url.hash = '';
  return url.toString();
}

let current: Tracing | undefined;

/** Starts tracing for this process (once: a second call returns the first's). */
export function startTracing(opts: TracingOptions): Tracing {
  if (current) return current;
  const { AsyncLocalStorageContextManager } = load('@opentelemetry/context-async-hooks') as typeof import('@opentelemetry/context-async-hooks');
  const { W3CTraceContextPropagator } = load('@opentelemetry/core') as typeof import('@opentelemetry/core');
  const { OTLPTraceExporter } = load('@opentelemetry/exporter-trace-otlp-proto') as typeof import('@opentelemetry/exporter-trace-otlp-proto');
  const { UndiciInstrumentation } = load('@opentelemetry/instrumentation-undici') as typeof import('@opentelemetry/instrumentation-undici');
  const { Resource } = load('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const { BasicTracerProvider, BatchSpanProcessor } = load('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  const resource = new Resource({ 'service.name': opts.serviceName });
  const exporter = new OTLPTraceExporter({ url: tracesUrl(opts.endpoint) });
  const spanProcessor = new BatchSpanProcessor(exporter, opts.scheduledDelayMs === undefined ? {} : { scheduledDelayMillis: opts.scheduledDelayMs });
  const provider = new BasicTracerProvider({ resource });
  provider.addSpanProcessor(spanProcessor);
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const undici = new UndiciInstrumentation({
    // Only requests made for a traced operation (an activity, an API call): the rest would be a root span each.
    requireParentforSpans: true,
    startSpanHook: (request) => {
      const url = new URL(request.path, request.origin);
      return { 'url.full': spanSafeUrl(url), 'url.query': spanSafeUrl(url).split('?')[1] ?? '' };
    },
  });
  undici.setTracerProvider(provider);
  undici.enable();
  const safeEndpoint = spanSafeUrl(tracesUrl(opts.endpoint)).split('?')[0]!;
  current = {
    tracer: provider.getTracer('metalflow'),
    resource,
    spanProcessor,
    endpoint: safeEndpoint,
    flush: () => provider.forceFlush(),
    shutdown: async () => {
      undici.disable();
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
      current = undefined;
    },
  };
  return current;
}

/** This process's tracing when it was started (the API server, the clients and the worker join it). */
export function activeTracing(): Tracing | undefined {
  return current;
}

/** Runs `fn` in a new active span when tracing is on (the Temporal calls it makes are its children), else just runs it. */
export async function inSpan<T>(tracing: Tracing | undefined, name: string, attributes: Attributes, fn: () => Promise<T>): Promise<T> {
  if (!tracing) return fn();
  return tracing.tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn();
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      span.end();
    }
  });
}
