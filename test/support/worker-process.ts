/**
 * Real worker processes for crash tests, and a HostService that shares their
 * task queue and secret store. Each worker is one Node process (tsx as a
 * loader, not its CLI, which forks), so SIGKILL hits the worker itself.
 */
import { TEST_FETCH_ENV } from './fetch-policy';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, type Connection } from '@temporalio/client';
import { HostService } from '../../api/host-service';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { REPO_ROOT } from '../../config/env';
import { TEMPORAL_ADDRESS, WORKFLOW_BUNDLE_PATH } from './env';
import { processArgs } from './process-bundles';
import { FAST_HOST_OPTIONS, uniq } from './harness';
import { expireLostAttempts, runningOn } from './lost-attempts';
import type { HostWorkflowOptions } from '../../contracts/host';

export class WorkerProcesses {
  readonly taskQueue: string;
  readonly deployment: string;
  private readonly key = randomBytes(32);
  private readonly secretDir: string;
  private readonly children: ChildProcess[] = [];

  constructor(
    label: string,
    /** Where the workers reach Ironic (often a proxy in front of the test stack's). */
    private readonly ironicUrl: () => string,
  ) {
    this.taskQueue = uniq(`tq-${label}`);
    this.deployment = uniq(`mf-${label}`);
    this.secretDir = mkdtempSync(join(tmpdir(), `mf-${label}-`));
  }

  start(): ChildProcess {
    const child = spawn(process.execPath, processArgs('worker'), {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        TEMPORAL_ADDRESS,
        IRONIC_URL: this.ironicUrl(),
        METALFLOW_TASK_QUEUE: this.taskQueue,
        METALFLOW_SECRET_DIR: this.secretDir,
        METALFLOW_SECRET_KEY: this.key.toString('base64'),
        METALFLOW_WORKFLOW_BUNDLE: WORKFLOW_BUNDLE_PATH,
        // A deployment of their own: the first worker makes its version current, as on a first install.
        METALFLOW_WORKER_DEPLOYMENT: this.deployment,
        ...TEST_FETCH_ENV,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stderr?.on('data', (d: Buffer) => process.stderr.write(`[worker ${child.pid}] ${d.toString()}`));
    this.children.push(child);
    return child;
  }

  /**
   * The one live worker: the one an earlier test left running when there is exactly one (each start costs a
   * process's load of the bundles), otherwise a fresh one, any others killed first so none takes over its work.
   */
  current(): ChildProcess {
    const live = this.children.filter((w) => w.exitCode === null && w.signalCode === null);
    if (live.length === 1) return live[0]!;
    this.killAll();
    return this.start();
  }

  /** The API's host service on the workers' task queue, with the secret store they read. */
  hostService(connection: Connection, hostOptions: Partial<HostWorkflowOptions> = FAST_HOST_OPTIONS): HostService {
    return new HostService({
      client: new Client({ connection }),
      secrets: new LocalSecretStore(this.secretDir, this.key),
      taskQueue: this.taskQueue,
      hostOptions,
    });
  }

  /**
   * Once `killed` is dead: the activity attempts it held on the workers' task queue given up by the server
   * at once, not at their heartbeat timeout (test/support/lost-attempts.ts). Returns how many there were.
   */
  async expireLost(connection: Connection, killed: ChildProcess): Promise<number> {
    const client = new Client({ connection });
    return expireLostAttempts(client, killed.pid!, await runningOn(client, this.taskQueue));
  }

  killAll(): void {
    for (const w of this.children) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
  }
}
