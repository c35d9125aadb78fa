/**
 * Traces (docs/observability.md): a host created through the API yields one
 * trace, in a real Jaeger, that runs from the API request through the
 * Temporal client's update-with-start, the workflow's update and activity
 * spans and the activities' own spans, to their HTTP requests to Ironic; and
 * no span holds a secret (the BMC password, the API token).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { HostService } from '../../api/host-service';
import { startTracing, type Tracing } from '../../clients/telemetry/tracing';
import { tracingClientInterceptors } from '../../clients/temporal/tracing-interceptors';
import { hostWorkflowId } from '../../model/host-ref';
import { TEST_PORTS } from '../support/env';
import { runTracedWorkflowBundle } from '../support/run-bundles';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { callApi, serveApi, writeTokenFile } from '../support/api-client';
import { jaegerUnavailable, startJaeger, type Jaeger, type JaegerSpan, type JaegerTrace } from '../support/jaeger';

const unavailable = jaegerUnavailable();
if (unavailable) console.warn(`tracing.test.ts skipped: ${unavailable}`);

describe.skipIf(unavailable !== undefined)('traces', () => {
  let jaeger: Jaeger;
  let tracing: Tracing;
  let h: Harness;
  let app: FastifyInstance;
  let base: string;
  let token: string;
  const created: string[] = [];

  beforeAll(async () => {
    const [started, code] = await Promise.all([startJaeger(), runTracedWorkflowBundle()]);
    jaeger = started;
    tracing = startTracing({ endpoint: jaeger.otlpEndpoint, serviceName: 'metalflow-test', scheduledDelayMs: 100 });
    h = await startHarness({ workflowCode: code, tracing });
    const client = new Client({ connection: h.env.connection, interceptors: tracingClientInterceptors(tracing) });
    const hosts = new HostService({ client, secrets: h.secrets, taskQueue: h.taskQueue, hostOptions: FAST_HOST_OPTIONS });
    const tokens = writeTokenFile([['admin', 'admin:*']]);
    token = tokens.tokens.admin!;
    ({ app, base } = await serveApi(hosts, { env: { METALFLOW_API_TOKENS_FILE: tokens.file }, tracing }));
  }, 120_000);

  afterAll(async () => {
    for (const name of created) await h?.hosts.remove({ namespace: 'traced', name }).catch(() => undefined);
    await Promise.all(created.map((name) => h?.client.workflow.getHandle(hostWorkflowId({ namespace: 'traced', name })).result().catch(() => undefined)));
    await app?.close();
    await h?.close();
    await tracing?.shutdown();
    await jaeger?.stop();
  }, 120_000);

  const tag = (s: JaegerSpan, key: string): unknown => s.tags.find((t) => t.key === key)?.value;
  const kind = (s: JaegerSpan): unknown => tag(s, 'span.kind');

  it('links the API request, the workflow, its activities and their Ironic requests in one trace, with no secret in it', async () => {
    const name = uniq('traced');
    created.push(name);
    const password = `pw-${randomBytes(12).toString('hex')}`;
    const res = await callApi(
      base,
      'PUT',
      `/v1/namespaces/traced/hosts/${name}`,
      { spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` }, bootMACAddress: randomMac(), online: false }, credentials: { username: 'admin', password } },
      { token },
    );
    expect(res.status, res.text).toBeLessThan(300);
    const traceId = String(res.traceId);
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);

    const ironicPort = TEST_PORTS.ironic;
    const ironicSpans = (t: JaegerTrace) => t.spans.filter((s) => kind(s) === 'client' && tag(s, 'server.port') === ironicPort);
    const parentIn = (t: JaegerTrace, s: JaegerSpan) => t.spans.find((p) => p.spanID === s.references.find((r) => r.refType === 'CHILD_OF')?.spanID);
    // A span is exported when it ends: an activity still waiting on Ironic has sent its requests' spans, not its own.
    const finishedActivity = (t: JaegerTrace) => ironicSpans(t).some((s) => parentIn(t, s)?.operationName.startsWith('RunActivity:'));
    // Each process exports its spans on its own schedule (the workflow's through the worker's sink), so the
    // trace is complete once every side has sent what this test looks at.
    const hasOp = (t: JaegerTrace, prefix: string) => t.spans.some((s) => s.operationName.startsWith(prefix));
    const complete = (t: JaegerTrace) =>
      finishedActivity(t) && ['PUT /v1/', 'UpdateWithStartWorkflow:', 'HandleUpdate:', 'StartActivity:'].every((p) => hasOp(t, p));
    const trace = await waitFor(
      'a trace in Jaeger with the API request, the workflow\'s update, an activity and its Ironic requests',
      async () => {
        await tracing.flush();
        const t = await jaeger.trace(traceId);
        return t && complete(t) ? t : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 300 },
    );

    const ops = trace.spans.map((s) => s.operationName);
    const parentOf = (s: JaegerSpan) => parentIn(trace, s);
    // The API's span is the root: the caller sent no trace context.
    const root = trace.spans.find((s) => s.operationName === 'PUT /v1/namespaces/:namespace/hosts/:name');
    expect(root, ops.join(', ')).toBeDefined();
    expect(root!.references).toEqual([]);
    expect(tag(root!, 'http.response.status_code')).toBe(res.status);
    // The Temporal client's update-with-start, under the API's span.
    const start = trace.spans.find((s) => s.operationName.startsWith('UpdateWithStartWorkflow:'));
    expect(start, ops.join(', ')).toBeDefined();
    expect(parentOf(start!)?.spanID).toBe(root!.spanID);
    expect(tag(start!, 'temporalWorkflowId')).toBe(hostWorkflowId({ namespace: 'traced', name }));
    // The workflow's side: the update it handled and the activities it scheduled.
    expect(ops.some((o) => o.startsWith('HandleUpdate:'))).toBe(true);
    expect(ops.some((o) => o.startsWith('StartActivity:'))).toBe(true);
    // Each Ironic request is a child of the activity that made it (of those whose activity has ended).
    for (const s of ironicSpans(trace)) {
      const activity = parentOf(s);
      if (activity) expect(activity.operationName, s.operationName).toMatch(/^RunActivity:/);
    }
    // And the activity is a child of the workflow's span that scheduled it.
    const activity = parentOf(ironicSpans(trace).find((s) => parentOf(s))!)!;
    expect(parentOf(activity)?.operationName).toBe(activity.operationName.replace('RunActivity:', 'StartActivity:'));
    const ironicPaths = ironicSpans(trace).map((s) => `${s.operationName} ${String(tag(s, 'url.path'))}`);
    expect(ironicPaths.some((p) => p.startsWith('POST /v1/nodes')), ironicPaths.join(', ')).toBe(true);

    // No secret anywhere in the trace: not the BMC password, not the API token, no authorization header.
    const text = JSON.stringify(trace);
    expect(text).not.toContain(password);
    expect(text).not.toContain(token);
    expect(text.toLowerCase()).not.toContain('authorization');
    const services = new Set(Object.values(trace.processes).map((p) => p.serviceName));
    expect([...services]).toEqual(['metalflow-test']);
  });
});
