/**
 * An Ironic of the caller's own, started through the project's
 * scripts/stack.sh (its own state folder and port), for tests that restart
 * Ironic with an empty database (`restart ironic --empty-db`, as a Metal3
 * Ironic pod restart on ephemeral SQLite does): the test stack's Ironic is
 * shared by every test file running at the same time.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../../config/env';

const run = promisify(execFile);

export interface OwnIronic {
  url: string;
  start(): Promise<void>;
  /** Stops Ironic, deletes its database, starts it again: every node is gone. */
  restartEmpty(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * scripts/stack.sh with `env`, its output in the error when it fails.
 * Asynchronous: a test's in-process worker must keep heartbeating while Ironic restarts.
 */
export function stackScript(env: NodeJS.ProcessEnv): (...args: string[]) => Promise<void> {
  return async (...args) => {
    try {
      await run('bash', [join(REPO_ROOT, 'scripts', 'stack.sh'), ...args], { env });
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; message: string };
      throw new Error(`scripts/stack.sh ${args.join(' ')} failed: ${e.stderr || e.stdout || e.message}`);
    }
  };
}

export function ownIronic(stateName: string, port: number): OwnIronic {
  // The script checks every service's port; only Ironic's is used here.
  const env = {
    ...process.env,
    METALFLOW_STATE_DIR: join(REPO_ROOT, '.state', stateName),
    IRONIC_PORT: String(port),
    TEMPORAL_PORT: String(port + 1),
    TEMPORAL_UI_PORT: String(port + 2),
    SUSHY_PORT: String(port + 3),
  };
  const stack = stackScript(env);
  return {
    url: `http://127.0.0.1:${port}`,
    start: () => stack('start', 'ironic'),
    restartEmpty: () => stack('restart', 'ironic', '--empty-db'),
    stop: () => stack('stop', 'ironic'),
  };
}
