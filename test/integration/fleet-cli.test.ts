/**
 * Fleet operations from the real `temporal` CLI (start, query, update
 * execute, a bad input that fails at once naming the field), a fleet that
 * continues as new with hosts in flight and acts on each host once, and the
 * API's per-namespace roles for fleet operations.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, arrayFromPayloads, defaultPayloadConverter } from '@temporalio/common';
import { REPO_ROOT } from '../../config/env';
import { uniq, waitFor } from '../support/harness';
import { callApi, serveApi, writeTokenFile } from '../support/api-client';
import { TEMPORAL_ADDRESS } from '../support/env';
import { availableHosts, useFleetStack } from '../support/fleet-hosts';
import { fleetProgressQuery, fleetWorkflowId, pauseFleetUpdate, resumeFleetUpdate, type FleetProgress } from '../../contracts/fleet';
import type { FleetCarry, fleetWorkflow } from '../../workflows/fleet/fleet';

const stack = useFleetStack();

/** The real CLI, run without blocking: the worker serving the fleet runs in this process. */
const temporal = async (...args: string[]): Promise<string> =>
  (await promisify(execFile)(join(REPO_ROOT, '.venv', 'bin', 'temporal'), [...args, '--address', TEMPORAL_ADDRESS], { encoding: 'utf8' })).stdout;

describe('fleet operations from the temporal CLI', { timeout: 600_000 }, () => {
  it('starts one with a JSON input, queries its progress, pauses and resumes it with updates', async () => {
    const ns = uniq('fleet');
    await availableHosts(stack.base, stack.h, ns, ['cli-a', 'cli-b', 'cli-c'], { via: 'cli' });
    const name = uniq('cli');
    const input = { name, operation: { kind: 'reboot' }, selector: { namespace: ns, labelSelector: { matchLabels: { via: 'cli' } } }, maxConcurrent: 1 };
    await temporal('workflow', 'start', '--type', 'fleetWorkflow', '--task-queue', stack.h.taskQueue, '--workflow-id', `fleet/${name}`, '--input', JSON.stringify(input));
    const update = (...args: string[]): Promise<string> => temporal('workflow', 'update', 'execute', '--workflow-id', `fleet/${name}`, ...args);
    const paused = JSON.parse(await update('--name', 'pause', '--input', '{"reason":"from the CLI"}', '-o', 'json')) as { result: FleetProgress };
    expect(paused.result.paused?.reason).toBe('from the CLI');
    const query = async (): Promise<FleetProgress> =>
      (JSON.parse(await temporal('workflow', 'query', '--workflow-id', `fleet/${name}`, '--type', 'progress', '-o', 'json')) as { queryResult: FleetProgress[] }).queryResult[0]!;
    await waitFor('paused, nothing in flight', async () => { const p = await query(); return p.phase === 'paused' && p.counts.inFlight === 0; }, { timeoutMs: 120_000 });
    await update('--name', 'resume');
    const done = await waitFor('completed', async () => { const p = await query(); return p.phase === 'completed' ? p : undefined; }, { timeoutMs: 300_000, intervalMs: 1000 });
    expect(done.counts).toMatchObject({ succeeded: 3, failed: 0 });
    // The API reads a fleet the CLI started (no scope memo: every namespace).
    expect((await callApi(stack.base, 'GET', `/v1/fleet-operations/${name}`)).json.phase).toBe('completed');
  });

  it('starts one in waves that pauses after the canary, then cancels it with abortInFlight, all from the CLI', async () => {
    const ns = uniq('fleet');
    const hosts = await availableHosts(stack.base, stack.h, ns, ['cw-a', 'cw-b', 'cw-c'], { via: 'cli' });
    const name = uniq('cliwave');
    const input = { name, operation: { kind: 'reboot' }, selector: { namespace: ns }, maxConcurrent: 2, waves: [{ size: 1 }, { size: '50%' }], pauseAfterWave: true };
    await temporal('workflow', 'start', '--type', 'fleetWorkflow', '--task-queue', stack.h.taskQueue, '--workflow-id', `fleet/${name}`, '--input', JSON.stringify(input));
    const query = async (): Promise<FleetProgress> =>
      (JSON.parse(await temporal('workflow', 'query', '--workflow-id', `fleet/${name}`, '--type', 'progress', '-o', 'json')) as { queryResult: FleetProgress[] }).queryResult[0]!;
    const paused = await waitFor('paused after the canary', async () => { const p = await query(); return p.phase === 'paused' && p.counts.inFlight === 0 ? p : undefined; }, { timeoutMs: 240_000, intervalMs: 1000 });
    expect(paused.wave).toEqual({ current: 2, count: 2, first: 1, end: 3 }); // 50 % of 3 rounded up
    const out = JSON.parse(await temporal('workflow', 'update', 'execute', '--workflow-id', `fleet/${name}`, '--name', 'cancel', '--input', '{"reason":"from the CLI","abortInFlight":true}', '-o', 'json')) as { result: FleetProgress };
    expect(out.result.cancelled).toMatchObject({ reason: 'from the CLI', abortInFlight: true });
    const done = await waitFor('cancelled', async () => { const p = await query(); return p.phase === 'cancelled' && p.counts.inFlight === 0 && p.counts.pending === 0 ? p : undefined; }, { timeoutMs: 240_000, intervalMs: 1000 });
    expect(done.counts).toMatchObject({ succeeded: 1, notStarted: 2, failed: 0, cancelled: 0 });
    for (const x of hosts.slice(1)) expect((await stack.h.hosts.get(x)).operations.filter((o) => o.kind === 'reboot')).toEqual([]);
  });

  it('a bad CLI input fails the run at once, naming the field', async () => {
    const name = uniq('bad');
    await temporal('workflow', 'start', '--type', 'fleetWorkflow', '--task-queue', stack.h.taskQueue, '--workflow-id', `fleet/${name}`, '--input', JSON.stringify({ name, operation: { kind: 'reboot', mode: 'gentle' }, selector: {} }));
    const err = await stack.h.client.workflow.getHandle(fleetWorkflowId(name)).result().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const cause = (err as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause.type).toBe('InvalidFleetInput');
    expect(cause.message).toMatch(/operation\.mode/);
    expect(cause.message).toMatch(/selector: must give at least one/);
    expect(cause.details?.[0]).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'operation.mode' })]));
  });
});

describe('a long fleet operation', { timeout: 600_000 }, () => {
  it('continues as new with hosts in flight and acts on every host exactly once', async () => {
    const ns = uniq('fleet');
    const hosts = await availableHosts(stack.base, stack.h, ns, ['cn-a', 'cn-b', 'cn-c', 'cn-d', 'cn-e'], { set: 'cn' });
    const name = uniq('long');
    const handle = await stack.h.client.workflow.start<typeof fleetWorkflow>('fleetWorkflow', {
      workflowId: fleetWorkflowId(name),
      taskQueue: stack.h.taskQueue,
      args: [{ name, operation: { kind: 'reboot', mode: 'hard' }, selector: { namespace: ns }, maxConcurrent: 2 }, { options: { maxHistoryEvents: 40 } }],
    });
    const done = await handle.result();
    expect(done.phase).toBe('completed');
    expect(done.runs).toBeGreaterThan(1);
    expect(done.counts).toMatchObject({ succeeded: 5, failed: 0 });
    for (const x of hosts) expect((await stack.h.hosts.get(x)).operations.filter((o) => o.kind === 'reboot'), x.name).toHaveLength(1);
    // Every run stayed near the limit (a run may pass it by what one workflow task adds).
    const runs: number[] = [];
    for await (const wf of stack.h.client.workflow.list({ query: `WorkflowId = '${fleetWorkflowId(name)}'` })) runs.push(wf.historyLength);
    expect(Math.max(...runs)).toBeLessThan(80);
    expect((await handle.query(fleetProgressQuery)).runs).toBe(done.runs);
    // The last run was handed its state packed: what lets 10,000 hosts fit in one payload.
    const started = (await handle.fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes;
    const [, carry] = arrayFromPayloads(defaultPayloadConverter, started?.input?.payloads ?? []) as [unknown, FleetCarry];
    expect(carry).not.toHaveProperty('state');
    expect(carry.packed?.rows).toHaveLength(5);
    expect(carry.options).toEqual({ maxHistoryEvents: 40 });
  });
});

describe('a fleet operation whose progress is too large to answer whole', { timeout: 600_000 }, () => {
  it('answers its first page to updates and at its end, and any page to the CLI query and the API', async () => {
    const ns = uniq('fleet');
    const hosts = await availableHosts(stack.base, stack.h, ns, ['pg-a', 'pg-b', 'pg-c'], { set: 'pg' });
    const name = uniq('paged');
    // The limit is 1 MB (some 3,000 hosts); a 3-host progress passes 1,000 bytes.
    const handle = await stack.h.client.workflow.start<typeof fleetWorkflow>('fleetWorkflow', {
      workflowId: fleetWorkflowId(name),
      taskQueue: stack.h.taskQueue,
      args: [{ name, operation: { kind: 'reboot' }, selector: { namespace: ns }, maxConcurrent: 1 }, { options: { progressLimitBytes: 1000 } }],
    });
    await waitFor('hosts selected', async () => (await handle.query(fleetProgressQuery)).selected === 3, { timeoutMs: 60_000 });
    const paused = await handle.executeUpdate(pauseFleetUpdate, { args: [{ reason: 'paged' }] });
    expect(paused.page).toMatchObject({ offset: 0, limit: 1000, total: 3 });
    expect(paused.page?.reason).toMatch(/over 1000 bytes: ask for pages/);
    expect(paused.selection?.hosts ?? []).toEqual([]);
    // A page from the real CLI: the query's argument.
    const page = (JSON.parse(await temporal('workflow', 'query', '--workflow-id', `fleet/${name}`, '--type', 'progress', '--input', '{"offset":1,"limit":1}', '-o', 'json')) as { queryResult: FleetProgress[] }).queryResult[0]!;
    expect(page.hosts.map((h) => h.ref)).toEqual([hosts[1]]);
    expect(page.page).toEqual({ offset: 1, limit: 1, total: 3 });
    await handle.executeUpdate(resumeFleetUpdate);
    const done = await handle.result();
    expect(done.phase).toBe('completed');
    expect(done.page?.total).toBe(3);
    expect(done.hosts).toHaveLength(3);
    // The API passes its query string on; a page it cannot give is a 400 naming the parameter.
    const succeeded = await callApi(stack.base, 'GET', `/v1/fleet-operations/${name}?outcome=succeeded&offset=2&limit=5`);
    expect(succeeded.status).toBe(200);
    expect(succeeded.json.page).toEqual({ offset: 2, limit: 5, total: 3, outcome: 'succeeded' });
    expect(succeeded.json.hosts).toHaveLength(1);
    const bad = await callApi(stack.base, 'GET', `/v1/fleet-operations/${name}?limit=0`);
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.json)).toMatch(/limit/);
  });
});

describe('fleet operation roles', { timeout: 120_000 }, () => {
  it('needs the role in every namespace the selector allows: operator for most, admin to delete', async () => {
    const { file, tokens } = writeTokenFile([['op', 'operator:lab'], ['viewer', 'viewer:*']]);
    const guarded = await serveApi(stack.h.hosts, { env: { METALFLOW_API_TOKENS_FILE: file } });
    try {
      const post = (token: string, body: unknown) => callApi(guarded.base, 'POST', '/v1/fleet-operations', body, { token });
      const base = { name: uniq('roles'), operation: { kind: 'reboot' }, dryRun: true };
      expect((await post(tokens.op!, { ...base, selector: { labelSelector: { matchLabels: { a: 'b' } } } })).status).toBe(403);
      expect((await post(tokens.op!, { ...base, selector: { namespace: 'other' } })).status).toBe(403);
      expect((await post(tokens.op!, { ...base, operation: { kind: 'delete' }, selector: { namespace: 'lab' } })).status).toBe(403);
      expect((await post(tokens.viewer!, { ...base, selector: { namespace: 'lab' } })).status).toBe(403);
      expect((await post(tokens.op!, { ...base, selector: { namespace: 'lab' } })).status).toBe(201);
      expect((await callApi(guarded.base, 'GET', `/v1/fleet-operations/${base.name}`, undefined, { token: tokens.viewer })).status).toBe(200);
      expect((await callApi(guarded.base, 'POST', `/v1/fleet-operations/${base.name}/cancel`, {}, { token: tokens.viewer })).status).toBe(403);
      expect((await callApi(guarded.base, 'GET', '/v1/fleet-operations')).status).toBe(401);
    } finally {
      await guarded.app.close();
    }
  });
});
