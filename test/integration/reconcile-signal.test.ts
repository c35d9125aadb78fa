/**
 * The Temporal client on the real dev server keeps an abort listener on a
 * call's signal after the call ends; a reconcile's own signal keeps those off
 * the controller's leadership signal, and still cuts a call short when the
 * leadership goes.
 */
import { getEventListeners } from 'node:events';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withReconcileSignal } from '../../k8s/controller/reconcile-signal';
import { TEMPORAL_ADDRESS } from '../support/env';

let connection: Connection;
let client: Client;
beforeAll(async () => {
  connection = await Connection.connect({ address: TEMPORAL_ADDRESS });
  client = new Client({ connection });
});
afterAll(() => connection.close());

const call = () => connection.workflowService.getSystemInfo({});

describe('a reconcile signal', () => {
  it('leaves no listener on the leadership signal, where calls straight under it leave one each', async () => {
    const straight = new AbortController();
    for (let i = 0; i < 5; i++) await client.withAbortSignal(straight.signal, call);
    expect(getEventListeners(straight.signal, 'abort')).toHaveLength(5);

    const leading = new AbortController();
    for (let i = 0; i < 5; i++) await withReconcileSignal(leading.signal, (signal) => client.withAbortSignal(signal, call));
    expect(getEventListeners(leading.signal, 'abort')).toHaveLength(0);
  });

  it('cancels a call under way when the leadership goes', async () => {
    const leading = new AbortController();
    // A long poll that answers only at its own timeout: only the abort can end it early.
    const polling = withReconcileSignal(leading.signal, (signal) =>
      client.withAbortSignal(signal, () => connection.workflowService.pollWorkflowTaskQueue({ namespace: 'default', taskQueue: { name: `reconcile-signal-${Date.now()}` } })),
    );
    leading.abort(new Error('lost the lease'));
    await expect(polling).rejects.toThrow(/cancel/i);
    expect(getEventListeners(leading.signal, 'abort')).toHaveLength(0);
  });
});
