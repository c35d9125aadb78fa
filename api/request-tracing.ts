/**
 * A server span per API request when the process traces (clients/telemetry/tracing.ts):
 * named by method and route, the parent of whatever the handler calls (the Temporal
 * client's start and update spans carry it on into the workflow). A caller's W3C
 * `traceparent` is honoured; `x-trace-id` on every answer names the trace to look up.
 * Only the method, route, path and status are recorded: never a header or a body.
 */
import { context, propagation, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Tracing } from '../clients/telemetry/tracing';

export function traceRequests(app: FastifyInstance, tracing: Tracing): void {
  const spans = new WeakMap<FastifyRequest, Span>();
  app.addHook('onRequest', (req, reply, done) => {
    const parent = propagation.extract(context.active(), req.headers);
    const route = req.routeOptions.url ?? '(no route)';
    const span = tracing.tracer.startSpan(
      `${req.method} ${route}`,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': req.method, 'http.route': route, 'url.path': (req.url.split('?')[0] ?? '').slice(0, 1024), 'url.scheme': req.protocol },
      },
      parent,
    );
    spans.set(req, span);
    void reply.header('x-trace-id', span.spanContext().traceId);
    done();
  });
  // The handler runs inside its request's span, so the spans it causes are its children (hooks before it are
  // not: authentication makes no outbound call).
  app.addHook('onRoute', (route: RouteOptions) => {
    const handler = route.handler;
    route.handler = function traced(this: unknown, req: FastifyRequest, reply: FastifyReply) {
      const span = spans.get(req);
      return span ? context.with(trace.setSpan(context.active(), span), () => handler.call(this as never, req, reply)) : handler.call(this as never, req, reply);
    };
  });
  app.addHook('onResponse', (req, reply, done) => {
    const span = spans.get(req);
    if (span) {
      span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
    done();
  });
}
