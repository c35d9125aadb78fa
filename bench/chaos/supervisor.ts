/**
 * The chaos run's processes, and how faults kill and restart them. metalflow's
 * own processes (workers, API, controller) run as supervised children: one
 * that exits by itself is restarted after a backoff, as systemd or a
 * Deployment would, and its exit is recorded (a finding: nothing should
 * crash); one a fault killed stays down until the fault restarts it. The
 * stack's services (Temporal, Ironic) are killed by process group and
 * started again through scripts/stack.sh, without blocking this process
 * (the proxies live here and must keep answering meanwhile).
 */
import { join } from 'node:path';
import { REPO_ROOT } from '../../config/env';
import { groupAlive, runCommand, servicePidAt, stackAtAsync, startNodeChild, waitUntil, type Child, type StackService, type StackTarget } from '../procs';
import { sleep } from '../common';

export type ProcessName = 'worker-api' | 'worker-k8s' | 'api' | 'controller';

export interface ProcessSpec {
  name: ProcessName;
  /** Script run with `node --import tsx`. */
  file: string;
  env: Record<string, string>;
  logFile: string;
  /** Up and serving, from its output or a probe. */
  ready: (output: string[]) => boolean | Promise<boolean>;
}

export interface Crash {
  process: ProcessName;
  at: number;
  exit: string;
  /** Its last lines of output. */
  tail: string[];
}

export class Supervised {
  private child?: Child;
  /** Down on purpose (a fault killed it): not restarted by the supervisor. */
  private down = false;
  private stopping = false;
  private backoffMs = 1000;
  starts = 0;

  constructor(
    readonly spec: ProcessSpec,
    private readonly crashes: Crash[],
    private readonly log: (line: string) => void,
  ) {}

  get alive(): boolean {
    return this.child !== undefined && this.child.proc.exitCode === null && this.child.proc.signalCode === null;
  }

  start(): void {
    this.down = false;
    const child = startNodeChild(this.spec.name, this.spec.file, this.spec.env, this.spec.logFile);
    this.child = child;
    this.starts += 1;
    const startedAt = Date.now();
    child.proc.once('exit', (code, signal) => {
      if (this.child !== child || this.stopping || this.down) return;
      // Up for a minute: the next crash starts the backoff again.
      if (Date.now() - startedAt > 60_000) this.backoffMs = 1000;
      const delay = this.backoffMs;
      this.backoffMs = Math.min(this.backoffMs * 2, 15_000);
      this.crashes.push({ process: this.spec.name, at: Date.now(), exit: String(code ?? signal), tail: child.output.slice(-15) });
      this.log(`${this.spec.name} exited by itself (${code ?? signal}); restarting it in ${delay / 1000} s`);
      setTimeout(() => {
        if (this.child === child && !this.stopping && !this.down) this.start();
      }, delay).unref();
    });
  }

  async waitReady(timeoutMs = 180_000): Promise<void> {
    await waitUntil(`${this.spec.name} ready`, () => (this.child ? this.spec.ready(this.child.output) : false), timeoutMs);
  }

  /** SIGKILL; it stays down until start(). */
  async kill(): Promise<void> {
    this.down = true;
    const child = this.child;
    if (!child || !this.alive) return;
    const exited = new Promise<void>((resolve) => child.proc.once('exit', () => resolve()));
    child.proc.kill('SIGKILL');
    await exited;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.child?.stop();
  }

  /** Stopped gracefully and started again with `env` added, then ready. */
  async restartWith(env: Record<string, string>): Promise<void> {
    await this.stop();
    this.stopping = false;
    Object.assign(this.spec.env, env);
    this.start();
    await this.waitReady();
  }
}

/** Temporal and Ironic of the chaos stack, killed and brought back the way an operator's restart would. */
export class StackServices {
  constructor(
    private readonly target: StackTarget,
    private readonly log: (line: string) => void,
  ) {}

  /** SIGKILL to the service's whole process group (Ironic forks a worker). */
  async kill(svc: StackService): Promise<void> {
    const pid = servicePidAt(this.target, svc);
    if (!pid) throw new Error(`${svc} is not running (no pid file in ${this.target.stateDir}/run)`);
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      process.kill(pid, 'SIGKILL');
    }
    await waitUntil(`${svc} (process group ${pid}) to die`, () => !groupAlive(pid), 30_000);
  }

  /** stack.sh start SERVICE, tried again if the first start fails (a port still held, a slow health check). */
  async start(svc: StackService): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await stackAtAsync(this.target, ['start', svc]);
        return;
      } catch (err) {
        if (attempt >= 4) throw err;
        this.log(`${svc} did not start (${String(err).slice(0, 200)}); trying again`);
        await sleep(2000 * attempt);
      }
    }
  }

  /** stack.sh restart ironic --empty-db: stopped, its database deleted, started on a fresh schema. */
  async restartIronicEmpty(): Promise<void> {
    await stackAtAsync(this.target, ['restart', 'ironic', '--empty-db']);
  }
}

/** scripts/kube.sh with the chaos run's kube ports and state dir. */
export const kubeSh = (env: Record<string, string>, ...args: string[]): Promise<string> =>
  runCommand('bash', [join(REPO_ROOT, 'scripts', 'kube.sh'), ...args], env);

/** The built kubectl against `kubeconfig`. */
export async function kubectl(kubeconfig: string, ...args: string[]): Promise<string> {
  const paths = await runCommand('bash', [join(REPO_ROOT, 'scripts', 'kube-build.sh'), '--paths'], {});
  const bin = /^KUBECTL=(.*)$/m.exec(paths)?.[1];
  if (!bin) throw new Error('scripts/kube-build.sh --paths named no kubectl');
  return runCommand(bin, ['--kubeconfig', kubeconfig, ...args], {});
}
