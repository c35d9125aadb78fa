/**
 * Traces (docs/observability.md): a host created through the API yields one
 * trace, in a real Jaeger, that runs from the API request through the
 * Temporal client's update-with-start, the workflow's update and activity
 * spans and the activities' own spans, to their HTTP requests to Ironic; and
 * no span holds a secret (the BMC password, the API token).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { HostService } from '../../api/host-service';
import { startTracing, type Tracing } from '../../clients/telemetry/tracing';
import { tracingClientInterceptors } from '../../clients/temporal/tracing-interceptors';
import { TRACED_WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import { hostWorkflowId } from '../../model/host-ref';
import { TEST_PORTS } from '../support/env';
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
  const name = uniq('traced');
  const password = `pw-${randomBytes(12).toString('hex')}`;

  beforeAll(async () => {
    jaeger = await startJaeger();
    tracing = startTracing({ endpoint: jaeger.otlpEndpoint, serviceName: 'metalflow-test', scheduledDelayMs: 100 });
    const { code } = await bundleWorkflowCode({ ...TRACED_WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
    h = await startHarness({ workflowCode: code, tracing });
    const client = new Client({ connection: h.env.connection, interceptors: tracingClientInterceptors(tracing) });
    const hosts = new HostService({ client, secrets: h.secrets, taskQueue: h.taskQueue, hostOptions: FAST_HOST_OPTIONS });
    const tokens = writeTokenFile([['admin', 'admin:*']]);
    token = tokens.tokens.admin!;
    ({ app, base } = await serveApi(hosts, { env: { METALFLOW_API_TOKENS_FILE: tokens.file }, tracing }));
  }, 120_000);

  afterAll(async () => {
    await h?.hosts.remove({ namespace: 'traced', name }).catch(() => undefined);
    await h?.client.workflow.getHandle(hostWorkflowId({ namespace: 'traced', name })).result().catch(() => undefined);
    await app?.close();
    await h?.close();
    await tracing?.shutdown();
    await jaeger?.stop();
  }, 120_000);

  const tag = (s: JaegerSpan, key: string): unknown => s.tags.find((t) => t.key === key)?.value;
  const kind = (s: JaegerSpan): unknown => tag(s, 'span.kind');

  it('links the API request, the workflow, its activities and their Ironic requests in one trace, with no secret in it', async () => {
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
    const trace = await waitFor(
      'a trace in Jaeger with the activities and their Ironic requests',
      async () => {
        await tracing.flush();
        const t = await jaeger.trace(traceId);
        return t && ironicSpans(t).length > 0 && t.spans.some((s) => s.operationName.startsWith('RunActivity:')) ? t : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 300 },
    );

    const ops = trace.spans.map((s) => s.operationName);
    const byId = new Map(trace.spans.map((s) => [s.spanID, s]));
    const parentOf = (s: JaegerSpan) => byId.get(s.references.find((r) => r.refType === 'CHILD_OF')?.spanID ?? '');
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
    // Each Ironic request is a child of the activity that made it.
    for (const s of ironicSpans(trace)) expect(parentOf(s)?.operationName, s.operationName).toMatch(/^RunActivity:/);
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
