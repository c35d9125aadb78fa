/**
 * The pivot routes (api/pivot-routes.ts) on the real stack: a bad body is a
 * 400 naming each field; a pivot started on a worker without a Kubernetes
 * API server of its own (the harness's) fails at once naming the plane field,
 * its progress stays readable, and a control update on the ended run is a 409.
 */
import { describe, expect, it } from 'vitest';
import { WorkflowFailedError } from '@temporalio/client';
import { uniq } from '../support/harness';
import { callApi } from '../support/api-client';
import { useFleetStack } from '../support/fleet-hosts';
import { pivotWorkflowId } from '../../contracts/pivot';

const stack = useFleetStack();

describe('pivot API', { timeout: 300_000 }, () => {
  it('is in the OpenAPI document', async () => {
    const doc = (await callApi(stack.base, 'GET', '/openapi.json')).json as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/pivots', '/v1/pivots/{name}', '/v1/pivots/{name}/cancel']));
  });

  it('refuses a bad body with every field named, and nothing started', async () => {
    const name = uniq('pivot');
    const res = await callApi(stack.base, 'POST', '/v1/pivots', { name, source: {}, target: {}, selector: {}, maxConcurrent: 0 });
    expect(res.status).toBe(400);
    const fields = (res.json as { fields?: Array<{ field: string }> }).fields?.map((d) => d.field) ?? [];
    expect(fields).toEqual(expect.arrayContaining(['target.plane', 'selector', 'maxConcurrent']));
    expect((await callApi(stack.base, 'GET', `/v1/pivots/${name}`)).status).toBe(404);
  });

  it('starts pivot/<name>; one whose source plane has no API server fails naming the field; controls on it are 409', async () => {
    const name = uniq('pivot');
    const input = { name, source: {}, target: { plane: 'mgmt' }, selector: { namespace: 'metal3' } };
    const res = await callApi(stack.base, 'POST', '/v1/pivots', input);
    expect(res.status).toBe(201);
    expect((res.json as { name: string }).name).toBe(name);
    // The same POST again is the same pivot.
    expect((await callApi(stack.base, 'POST', '/v1/pivots', input)).status).toBe(200);
    const err = await stack.h.client.workflow.getHandle(pivotWorkflowId(name)).result().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const messages: string[] = [];
    for (let e: unknown = err; e instanceof Error; e = e.cause) messages.push(e.message);
    expect(messages.join(' / ')).toContain('source.plane: is required');
    const progress = await callApi(stack.base, 'GET', `/v1/pivots/${name}`);
    expect(progress.status).toBe(200);
    expect((progress.json as { phase: string }).phase).toBe('selecting');
    expect((await callApi(stack.base, 'POST', `/v1/pivots/${name}/pause`, { reason: 'x' })).status).toBe(409);
  });
});
