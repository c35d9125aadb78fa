/**
 * Ironic's back-pressure without a stack: its answers typed by the client
 * (Ironic's own 503 bodies, test/support/ironic-busy.ts, from a server that
 * plays Ironic's part since the real one refuses nothing on cue; a proxy's
 * 503; an answer that never comes), the wait within an attempt
 * (activities/ironic/back-pressure.ts), whether a verb marked on a node was
 * carried out (node-driver.ts), and which failed inspections are Ironic's
 * rather than the host's (register.ts inspectPlan). The stack test is
 * test/integration/ironic-back-pressure.test.ts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IronicClient, IronicError, retryAfterMs } from '../../clients/ironic/client';
import type { IronicNode } from '../../clients/ironic/types';
import { patience } from '../../activities/ironic/back-pressure';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { NodeWatcher } from '../../clients/ironic/node-watcher';
import { createNodeDriver, markedVerbLanded, verbLanded, type Step } from '../../activities/ironic/node-driver';
import { inspectPlan } from '../../activities/ironic/register';
import { provisionMoment } from '../../activities/ironic/sent-marker';
import { TRANSIENT_RESENDS } from '../../activities/ironic/transient';
import { concurrentActionLimit, NO_FREE_CONDUCTOR_WORKER } from '../support/ironic-busy';

let server: Server;
let url: string;
/** What the stand-in answers a node's provision-state PUT with. */
let answer: { status: number; body: string; headers?: Record<string, string> } | 'none' = { status: 202, body: '' };
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/v1/') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ version: { version: '1.99', min_version: '1.1' } }));
      return;
    }
    if (answer === 'none') return; // the request is read and never answered
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(resolve));
});

const refusal = (p: Promise<unknown>): Promise<IronicError> => p.then(() => { throw new Error('expected a refusal'); }, (e: unknown) => e as IronicError);

describe("Ironic's back-pressure answers, typed", () => {
  it("Ironic's own 503 (concurrent action limit, no free worker) is busy; a proxy's 503 is unavailable; no answer is timed-out", async () => {
    const ironic = new IronicClient({ url, requestTimeoutMs: 300 });
    answer = { status: 503, body: concurrentActionLimit('unprovisioning') };
    const limit = await refusal(ironic.setProvisionState('n1', 'deleted'));
    expect(limit).toMatchObject({ kind: 'busy', status: 503, retryAfterMs: undefined });
    expect(limit.message).toMatch(/HTTP 503: Unable to process request at this time\. The concurrent action limit for unprovisioning has been reached/);
    answer = { status: 503, body: NO_FREE_CONDUCTOR_WORKER, headers: { 'retry-after': '7' } };
    expect(await refusal(ironic.setPowerState('n1', 'power off'))).toMatchObject({ kind: 'busy', retryAfterMs: 7000 });
    answer = { status: 503, body: '<html><body>503 Service Unavailable: no server is available</body></html>' };
    expect(await refusal(ironic.deleteNode('n1'))).toMatchObject({ kind: 'unavailable', status: 503 });
    answer = 'none';
    const late = await refusal(ironic.setProvisionState('n1', 'inspect'));
    expect(late.kind).toBe('timed-out');
    expect(late.message).toMatch(/^Ironic PUT \/v1\/nodes\/n1\/states\/provision: no answer within 0.3 s .*whether Ironic carried it out is unknown$/);
    answer = { status: 202, body: '' };
  });

  it('Retry-After: seconds or an HTTP date; nothing readable is no wait', () => {
    const now = Date.parse('2026-12-03T17:00:00Z');
    expect(retryAfterMs('30', now)).toBe(30_000);
    expect(retryAfterMs('Thu, 03 Dec 2026 17:00:05 GMT', now)).toBe(5000);
    expect(retryAfterMs('Thu, 03 Dec 2026 16:59:00 GMT', now)).toBe(0);
    expect(retryAfterMs(undefined, now)).toBeUndefined();
    expect(retryAfterMs('soon', now)).toBeUndefined();
  });
});

describe('the wait within an attempt', () => {
  const busy = (retryAfter?: number) => new IronicError('busy', 'x', 503, undefined, retryAfter);

  it('waits for busy and timed-out with growing pauses until its budget is spent; anything else is not waited for', async () => {
    const p = patience({ firstMs: 5, maxMs: 20, budgetMs: 150, random: () => 0.5 });
    expect(await p.wait(new IronicError('conflict', 'locked', 409))).toBe(false);
    expect(await p.wait(new IronicError('unavailable', 'refused'))).toBe(false);
    expect(await p.wait(new Error('x'))).toBe(false);
    const started = Date.now();
    let waits = 0;
    while (await p.wait(waits % 2 ? busy() : new IronicError('timed-out', 'x'))) waits++;
    // 5, 10, 20, 20, …: about 150 ms of waiting, then the caller throws.
    expect(waits).toBeGreaterThanOrEqual(5);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(p.waited).toBe(waits);
    p.reset();
    expect(await p.wait(busy())).toBe(true);
  });

  it("honours Retry-After (bounded by what is left of the budget)", async () => {
    const p = patience({ firstMs: 5, maxMs: 20, budgetMs: 120, random: () => 0.5 });
    const started = Date.now();
    expect(await p.wait(busy(80))).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(75);
    expect(await p.wait(busy(80))).toBe(true); // only what is left: ~40 ms
    expect(Date.now() - started).toBeLessThan(200);
    expect(await p.wait(busy(80))).toBe(false);
  });
});

const node = (over: Partial<IronicNode>): IronicNode => ({ uuid: 'n1', provision_state: 'manageable', provision_updated_at: '2026-12-03T17:00:00', last_error: null, ...over }) as IronicNode;

describe('a verb marked on the node: carried out or not', () => {
  const before = node({});
  const marker = { before: provisionMoment(before) };
  it('carried out once the node moved since the marker; not while it has not', () => {
    expect(markedVerbLanded(before, marker)).toBe(false);
    expect(markedVerbLanded(node({ provision_state: 'inspecting', provision_updated_at: '2026-12-03T17:00:09' }), marker)).toBe(true);
    // Back where it was, later (a quick inspection): carried out.
    expect(markedVerbLanded(node({ provision_updated_at: '2026-12-03T17:00:09' }), marker)).toBe(true);
  });
  it("not when Ironic rolled it back for want of a free conductor worker (the states restored, its time moved)", () => {
    expect(markedVerbLanded(node({ provision_updated_at: '2026-12-03T17:00:01', last_error: 'No free conductor workers available' }), marker)).toBe(false);
  });
});

describe('a verb marked on the node, back where it was with no last_error: the history decides', () => {
  const marker = { before: provisionMoment(node({})) };
  const history = (events: { created_at: string; event: string }[]) =>
    ({ getNodeHistory: async () => events.map((e) => ({ ...e, severity: 'ERROR' })) }) as unknown as IronicClient;
  const back = node({ provision_updated_at: '2026-12-03T17:00:01' });
  it("not carried out: Ironic's rollback after the marker, whose last_error its power sync cleared (node_history on)", async () => {
    expect(await verbLanded(history([{ created_at: '2026-12-03T17:00:01', event: 'No free conductor workers available' }]), back, marker)).toBe(false);
  });
  it('carried out: no rollback since the marker, an older one, or no history (node_history off keeps last_error instead)', async () => {
    expect(await verbLanded(history([]), back, marker)).toBe(true);
    expect(await verbLanded(history([{ created_at: '2026-12-03T16:59:00', event: 'No free conductor workers available' }]), back, marker)).toBe(true);
    expect(await verbLanded(history([{ created_at: '2026-12-03T17:00:01', event: 'Redfish exception occurred' }]), back, marker)).toBe(true);
  });
  it('the node alone when it tells: moved on, not moved, or a last_error', async () => {
    const unread = { getNodeHistory: async () => expect.unreachable('the history is not read') } as unknown as IronicClient;
    expect(await verbLanded(unread, node({ provision_state: 'inspecting', provision_updated_at: '2026-12-03T17:00:01' }), marker)).toBe(true);
    expect(await verbLanded(unread, node({}), marker)).toBe(false);
    expect(await verbLanded(unread, node({ provision_updated_at: '2026-12-03T17:00:01', last_error: 'No free conductor workers available' }), marker)).toBe(false);
  });
});

describe('a failed inspection: Ironic’s or the host’s', () => {
  const failed = (last_error: string | null) => node({ provision_state: 'inspect failed', last_error });
  const resent = (s: Step): boolean => 'verb' in s && s.verb === 'inspect' && s.prepare !== undefined;

  it('no reason, after an inspect of ours that got no answer: Ironic’s (sent again, quietly)', () => {
    expect(resent(inspectPlan(failed(null), ['manage', 'inspect'], ['inspect']))).toBe(true);
    expect(resent(inspectPlan(failed(''), ['inspect'], ['inspect']))).toBe(true);
  });
  it('no reason after an inspect Ironic answered: the host’s, unless the reason the node’s history keeps is Ironic’s saturation', () => {
    for (const unanswered of [[], ['manage']]) {
      const step = inspectPlan(failed(null), ['inspect'], unanswered);
      expect(step).toMatchObject({ failed: 'inspection failed', unlessIronics: { verb: 'inspect' } });
    }
  });
  it("a reason: Ironic's saturation is Ironic's, any other the host's, unanswered or not", () => {
    expect(resent(inspectPlan(failed('Failed to inspect hardware. Reason: Unexpected exception TemporaryFailure during processing'), ['inspect'], []))).toBe(true);
    expect(inspectPlan(failed('Redfish exception occurred. Error: 401 Unauthorized'), ['inspect'], ['inspect'])).toEqual({ failed: 'inspection failed' });
  });
  it(`sent again at most ${TRANSIENT_RESENDS} times`, () => {
    const sent = Array.from({ length: TRANSIENT_RESENDS + 1 }, () => 'inspect');
    expect(resent(inspectPlan(failed(null), sent.slice(1), ['inspect']))).toBe(true);
    expect(inspectPlan(failed(null), sent, ['inspect'])).toEqual({ failed: 'inspection failed' });
  });
  it('an inspection failed before this operation sent one is inspected again', () => {
    expect(inspectPlan(failed('anything'), [], [])).toEqual({ verb: 'inspect' });
  });
});

describe("a failed inspection whose last_error Ironic's power sync already cleared", () => {
  /**
   * The drive loop on a stand-in Ironic: the node `inspect failed` with no last_error (cleared "after confirmed
   * power state match"), the reason only in its history, as a 100-host Redfish run under load read it.
   */
  async function inspectAfter(historyError: string): Promise<{ result: unknown; sent: string[] }> {
    let current = failed(null);
    const sent: string[] = [];
    const ironic = {
      getNode: async () => current,
      getNodeHistory: async () => [{ created_at: '2026-12-03T17:42:06', severity: 'ERROR', event: historyError }],
      patchNode: async () => current,
      setProvisionState: async (_id: string, verb: string) => {
        sent.push(verb);
        current = node({ provision_state: 'inspecting', provision_updated_at: '2026-12-03T17:46:56' });
      },
    } as unknown as IronicClient;
    const watcher = { waitFor: async () => ({ outcome: 'changed', state: { uuid: 'n1', provision_state: 'manageable' } }) } as unknown as NodeWatcher;
    const { drive } = createNodeDriver({ ironic, poll: { initialMs: 1, factor: 1, maxMs: 1 }, watcher });
    // The inspection an earlier attempt sent is in the heartbeat details.
    const env = new MockActivityEnvironment({ heartbeatDetails: { issued: ['inspect'] } });
    const result = await env.run(() => drive('n1', inspectPlan)).then((n) => (n as IronicNode).provision_state, (e: unknown) => e);
    return { result, sent };
  }
  const failed = (last_error: string | null) => node({ provision_state: 'inspect failed', last_error });

  it('the history says TemporaryFailure: Ironic’s, inspected again', { timeout: 10_000 }, async () => {
    const { result, sent } = await inspectAfter('Failed to inspect hardware. Reason: Unexpected exception TemporaryFailure during processing for node: n1');
    expect(sent).toEqual(['inspect']);
    expect(result).toBe('manageable');
  });
  it('the history says anything else: the host’s, with that reason', async () => {
    const { result, sent } = await inspectAfter('Failed to inspect hardware. Reason: Redfish exception occurred. Error: 401 Unauthorized');
    expect(sent).toEqual([]);
    expect(result).toMatchObject({ type: 'OperationFailed', message: expect.stringContaining('inspection failed: Failed to inspect hardware. Reason: Redfish exception') });
  });
});
