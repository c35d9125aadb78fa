/**
 * The benchmark's check after each phase (bench/host-look.ts
 * abnormallyEndedHosts) against the real dev server's visibility: the run's
 * host workflows that were terminated or timed out are named; one still
 * running and another run's terminated one are not. Without it a
 * host whose workflow died would never count as anything, and the phase
 * would only time out. No worker polls the task queue: the workflows are
 * started by type name and ended from the client.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { abnormallyEndedHosts } from '../../bench/host-look';
import { TEMPORAL_ADDRESS } from '../support/env';
import { uniq, waitFor } from '../support/harness';

let connection: Connection;
let client: Client;

beforeAll(async () => {
  connection = await Connection.connect({ address: TEMPORAL_ADDRESS });
  client = new Client({ connection });
});
afterAll(async () => {
  await connection?.close();
});

describe('bench: hosts that ended abnormally', () => {
  it('names the run\'s terminated and timed-out host workflows, not the running ones or another run\'s', async () => {
    const run = uniq('bench-abn');
    const other = uniq('bench-other');
    const taskQueue = uniq('tq-abn');
    const start = (namespace: string, name: string, timeout?: string) =>
      client.workflow.start('hostWorkflow', { workflowId: `host/${namespace}/${name}`, taskQueue, args: [], ...(timeout ? { workflowExecutionTimeout: timeout } : {}) });

    const running = await start(run, 'h-running');
    const terminated = await start(run, 'h-terminated');
    await start(run, 'h-timed-out', '1 second');
    const elsewhere = await start(other, 'h-terminated');
    await terminated.terminate('test');
    await elsewhere.terminate('test');

    const ended = await waitFor('both abnormal ends visible', async () => {
      const names = await abnormallyEndedHosts(client, run);
      return names.length >= 2 ? names : undefined;
    }, { timeoutMs: 30_000, intervalMs: 500 });
    expect(ended.sort()).toEqual(['h-terminated (TERMINATED)', 'h-timed-out (TIMED_OUT)']);
    expect(await waitFor("the other run's end visible", async () => {
      const names = await abnormallyEndedHosts(client, other);
      return names.length > 0 ? names : undefined;
    }, { timeoutMs: 30_000, intervalMs: 500 })).toEqual(['h-terminated (TERMINATED)']);
    // Still running: not abnormal.
    expect((await running.describe()).status.name).toBe('RUNNING');
    await running.terminate('test done');
  });
});
