/**
 * A test file's crash-window setup: worker processes reaching Ironic through
 * the recording proxy, and a host service whose failed operations wait long
 * before their retry, so only a crashed attempt's own requests are counted.
 */
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { Connection } from '@temporalio/client';
import type { HostService } from '../../api/host-service';
import { IRONIC_URL, TEMPORAL_ADDRESS } from './env';
import { FAST_HOST_OPTIONS } from './harness';
import { IronicProxy } from '../../bench/support/ironic-proxy';
import { WorkerProcesses } from './worker-process';

export interface CrashWindow {
  readonly proxy: IronicProxy;
  readonly hosts: HostService;
  readonly workers: WorkerProcesses;
  /** Once `killed` is dead: the attempts it held given up at once (WorkerProcesses.expireLost). */
  expireLost(killed: ChildProcess): Promise<number>;
}

/**
 * `keepWorker`: the worker left running by a test is not killed after it, so the next test's first worker
 * is `workers.current()` (started only when none is left), not a process of its own.
 */
export function useCrashWindow(name: string, opts: { keepWorker?: boolean } = {}): CrashWindow {
  let proxy: IronicProxy | undefined;
  let connection: Connection | undefined;
  let hosts: HostService | undefined;
  const workers = new WorkerProcesses(name, () => ready(proxy).url);
  beforeAll(async () => {
    proxy = new IronicProxy(IRONIC_URL);
    await proxy.start();
    connection = await Connection.connect({ address: TEMPORAL_ADDRESS });
    hosts = workers.hostService(connection, { ...FAST_HOST_OPTIONS, errorBackoffSeconds: 600, maxErrorBackoffSeconds: 600 });
  });
  // Each test kills the worker it started; one left from an earlier test would take over its work
  // (with keepWorker, workers.current() keeps only one alive).
  afterEach(() => {
    if (!opts.keepWorker) workers.killAll();
  });
  afterAll(async () => {
    workers.killAll();
    await proxy?.stop();
    await connection?.close();
  });
  const ready = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error('the crash window is not set up yet');
    return v;
  };
  return {
    get proxy() {
      return ready(proxy);
    },
    get hosts() {
      return ready(hosts);
    },
    workers,
    expireLost: (killed) => workers.expireLost(ready(connection), killed),
  };
}
