/**
 * Eager workflow start, as this Temporal serves it (docs/operations.md, *API call to first activity*): what
 * it would take for the API's calls to have their first workflow task run in the process that made the call.
 * A plain start from a client sharing a worker's NativeConnection is handed its first task in the start's
 * reply and that worker runs it; a client without a worker on that connection cannot ask; and the API's
 * create, an update-with-start, is refused by the server when it asks. Every later call on a host is an
 * update of a running workflow, never a start. If this Temporal ever takes the update-with-start, the
 * refusal below fails: the API's create could then ask for it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { applySpecUpdate, hostViewQuery } from '../../contracts/host';
import type { HostSpec } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { hostWorkflowStart } from '../../control/host-run';
import { startHarness, uniq, type Harness } from '../support/harness';

type Event = temporal.api.history.v1.IHistoryEvent;

let h: Harness;
/** A client on the worker's own connection: the only kind the SDK lets ask for an eager start. */
let sharing: Client;
const started: string[] = [];

beforeAll(async () => {
  h = await startHarness();
  sharing = new Client({ connection: h.nativeConnection, namespace: 'default' });
});

afterAll(async () => {
  await Promise.all(started.map((id) => h?.client.workflow.getHandle(id).terminate('test done').catch(() => undefined)));
  await h?.close();
});

const ref = () => ({ namespace: 'eager', name: uniq('h') });

/** A host workflow with no spec: it waits for one and touches nothing. */
function hostStart(r: { namespace: string; name: string }, requestEagerStart: boolean) {
  started.push(hostWorkflowId(r));
  return { workflowId: hostWorkflowId(r), taskQueue: h.taskQueue, args: [{ ref: r }] as const, requestEagerStart };
}

async function firstTask(workflowId: string): Promise<{ eagerAccepted: boolean; completedBy?: string }> {
  const handle = h.client.workflow.getHandle(workflowId);
  // The first task's completion is awaited by its query (a query waits for the run's first task).
  await handle.query(hostViewQuery);
  const events = ((await handle.fetchHistory()).events ?? []) as Event[];
  const startedEvent = events.find((e) => e.workflowExecutionStartedEventAttributes)?.workflowExecutionStartedEventAttributes;
  const completed = events.find((e) => e.workflowTaskCompletedEventAttributes)?.workflowTaskCompletedEventAttributes;
  return { eagerAccepted: startedEvent?.eagerExecutionAccepted === true, completedBy: completed?.identity ?? undefined };
}

/** Every message down an error's causes (the SDK wraps the server's answer). */
function messages(err: unknown): string {
  const out: string[] = [];
  for (let e = err as { message?: string; cause?: unknown; details?: unknown } | undefined; e && out.length < 6; e = e.cause as typeof e) out.push(String(e.message ?? e), JSON.stringify(e.details ?? ''));
  return out.join(' | ');
}

describe('eager workflow start', () => {
  it('a plain start on a worker\'s connection gets its first task back and that worker runs it; without asking it goes through the queue', async () => {
    const eager = ref();
    const handle = await sharing.workflow.start('hostWorkflow', hostStart(eager, true));
    expect(handle.eagerlyStarted).toBe(true);
    const first = await firstTask(hostWorkflowId(eager));
    expect(first).toEqual({ eagerAccepted: true, completedBy: h.worker.options.identity });

    const plain = ref();
    const queued = await sharing.workflow.start('hostWorkflow', hostStart(plain, false));
    expect(queued.eagerlyStarted).toBe(false);
    expect(await firstTask(hostWorkflowId(plain))).toEqual({ eagerAccepted: false, completedBy: h.worker.options.identity });
  });

  it('a client with no worker on its connection cannot ask (the API\'s client)', async () => {
    await expect(h.client.workflow.start('hostWorkflow', hostStart(ref(), true))).rejects.toThrow(/NativeConnection/);
  });

  it('the server refuses it for the API\'s create, an update-with-start', async () => {
    const r = ref();
    const op = hostWorkflowStart(r, h.taskQueue, undefined);
    op.options.requestEagerStart = true;
    started.push(hostWorkflowId(r));
    const spec: HostSpec = { bmc: { address: `fake://${r.name}`, credentialsName: `${r.name}-bmc-secret` }, bootMACAddress: '52:54:00:00:00:01', online: false };
    const err = await sharing.workflow
      .executeUpdateWithStart(applySpecUpdate, { args: [spec], startWorkflowOperation: op })
      .then(() => undefined, (e: unknown) => e);
    expect(messages(err)).toMatch(/RequestEagerExecution is not supported/);
  });
});
