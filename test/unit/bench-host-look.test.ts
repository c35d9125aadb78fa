/**
 * The benchmark's look at its hosts (bench/host-look.ts): one visibility list per tick, narrowed
 * to what the waiting hosts can learn from, and none while the fleet is sampled at rest.
 * test/bench/bench.test.ts runs the query against the real dev server.
 */
import { describe, expect, it } from 'vitest';
import { addToLook, hostLookQuery, type HostLook } from '../../bench/host-look';
import { Ticker } from '../../bench/ticker';

const state = (s: string) => ({ MetalflowProvisioningState: [s] });

describe('bench host look', () => {
  it('asks only about the waiting hosts: in the target state (running at all, for gone), plus any operation child', () => {
    expect(hostLookQuery('bench-1', 'provisioned', ['h-0001', 'h-0007'])).toBe(
      'ExecutionStatus = "Running" AND ((WorkflowId IN ("host/bench-1/h-0001", "host/bench-1/h-0007") AND MetalflowProvisioningState = "provisioned")' +
        ' OR (WorkflowId STARTS_WITH "host/bench-1/" AND WorkflowType != "hostWorkflow"))',
    );
    expect(hostLookQuery('bench-1', 'gone', ['h-0001'])).toBe(
      'ExecutionStatus = "Running" AND ((WorkflowId IN ("host/bench-1/h-0001")) OR (WorkflowId STARTS_WITH "host/bench-1/" AND WorkflowType != "hostWorkflow"))',
    );
  });

  it('sorts the rows: a host workflow gives its state, an operation child makes its host busy', () => {
    const look: HostLook = { states: new Map(), busy: new Set() };
    addToLook(look, 'host/bench-1/h-0001', state('available'));
    addToLook(look, 'host/bench-1/h-0002', state('provisioning'));
    addToLook(look, 'host/bench-1/h-0002/3-provision', state('provisioning'));
    addToLook(look, 'host/bench-1/h-0003', undefined);
    expect([...look.states]).toEqual([
      ['h-0001', 'available'],
      ['h-0002', 'provisioning'],
      ['h-0003', ''],
    ]);
    expect([...look.busy]).toEqual(['h-0002']);
  });

  it('takes no look while paused, and the waiters of a look get the first one after resume', async () => {
    let looks = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let looking = false;
    const ticker = new Ticker(async () => {
      looks++;
      looking = true;
      if (looks === 2) await gate;
      looking = false;
    }, 1);
    ticker.start();
    await ticker.next();
    // Pause during the second look: pause() resolves only once that look has ended.
    while (looks < 2) await new Promise((r) => setImmediate(r));
    const paused = ticker.pause();
    let pauseDone = false;
    void paused.then(() => (pauseDone = true));
    await new Promise((r) => setImmediate(r));
    expect(pauseDone).toBe(false);
    release();
    await paused;
    expect(looking).toBe(false);
    const atPause = looks;
    const waiter = ticker.next();
    let woke = false;
    void waiter.then(() => (woke = true));
    for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 2));
    expect(looks).toBe(atPause);
    expect(woke).toBe(false);
    ticker.resume();
    await waiter;
    expect(looks).toBe(atPause + 1);
    await ticker.stop();
  });
});
