/**
 * An Ironic of the caller's own, started through the project's
 * scripts/stack.sh (its own state folder and port), for tests that restart
 * Ironic with an empty database (`restart ironic --empty-db`, as a Metal3
 * Ironic pod restart on ephemeral SQLite does): the test stack's Ironic is
 * shared by every test file running at the same time.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../../config/env';

const run = promisify(execFile);

export interface OwnIronic {
  url: string;
  /** The sushy-tools emulator started beside it (`withSushy`), for Redfish hosts whose BMC no other file powers. */
  sushyUrl: string;
  start(): Promise<void>;
  /** Stops Ironic, deletes its database, starts it again: every node is gone. */
  restartEmpty(): Promise<void>;
  /** Kills Ironic (its next start empties the database anyway) and stops what started beside it. */
  stop(): Promise<void>;
}

/**
 * scripts/stack.sh with `env`, its output in the error when it fails. Its Ironic computes the Redfish driver's
 * hash of a BMC password once, pools its SQLite connections and copies its empty database, as the test stack's does
 * (IRONIC_MEMO_SESSION_HASH, IRONIC_SQLITE_POOL, IRONIC_DB_TEMPLATE), unless `env` says otherwise.
 * Asynchronous: a test's in-process worker must keep heartbeating while Ironic restarts.
 */
export function stackScript(env: NodeJS.ProcessEnv): (...args: string[]) => Promise<void> {
  return async (...args) => {
    try {
      await run('bash', [join(REPO_ROOT, 'scripts', 'stack.sh'), ...args], { env: { IRONIC_MEMO_SESSION_HASH: '1', IRONIC_SQLITE_POOL: '1', IRONIC_DB_TEMPLATE: '1', ...env } });
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; message: string };
      throw new Error(`scripts/stack.sh ${args.join(' ')} failed: ${e.stderr || e.stdout || e.message}`);
    }
  };
}

/**
 * `withSushy`: a sushy emulator of its own too (fake power changes land within half a second), and
 * Ironic's power sync every `syncSeconds` (the stack's default 30 s otherwise), which also reads a
 * Redfish BMC's health into the node. `nodeHistory: false`: Ironic's `[conductor] node_history` off, as
 * Metal3's ironic-image sets it.
 */
export function ownIronic(stateName: string, port: number, opts: { withSushy?: boolean; syncSeconds?: number; nodeHistory?: boolean } = {}): OwnIronic {
  // The script checks every service's port; only Ironic's (and sushy's, with withSushy) is used here.
  const env = {
    ...process.env,
    METALFLOW_STATE_DIR: join(REPO_ROOT, '.state', stateName),
    IRONIC_PORT: String(port),
    TEMPORAL_PORT: String(port + 1),
    TEMPORAL_UI_PORT: String(port + 2),
    SUSHY_PORT: String(port + 3),
    SUSHY_POWER_DELAY: '0-0.5',
    ...(opts.syncSeconds ? { IRONIC_SYNC_POWER_STATE_INTERVAL: String(opts.syncSeconds) } : {}),
    ...(opts.nodeHistory !== undefined ? { IRONIC_NODE_HISTORY: String(opts.nodeHistory) } : {}),
  };
  const stack = stackScript(env);
  const services = opts.withSushy ? ['sushy', 'ironic'] : ['ironic'];
  return {
    url: `http://127.0.0.1:${port}`,
    sushyUrl: `http://127.0.0.1:${port + 3}`,
    // Empty from the start: nodes an earlier run left, whose BMCs are gone, would keep the power sync busy.
    start: () => stack('start', ...services, '--empty-db'),
    restartEmpty: () => stack('restart', 'ironic', '--empty-db'),
    stop: async () => {
      // A graceful stop waits for the power sync in progress, which retries a BMC gone with the test for 30 s
      // before the script's SIGKILL: nothing of this Ironic is kept, so it is killed at once.
      killGroup(join(env.METALFLOW_STATE_DIR, 'run', 'ironic.pid'));
      await stack('stop', ...services);
    },
  };
}

/** SIGKILL to the process group a pid file names (scripts/stack.sh starts each service as a group leader); none when it is gone. */
function killGroup(pidFile: string): void {
  let pid: number;
  try {
    pid = Number(readFileSync(pidFile, 'utf8').trim());
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 1) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}
