/**
 * Processes the benchmark starts or watches: the bench stack (scripts/stack.sh
 * on ports of its own), the worker and API as child processes, and their
 * memory and CPU read from /proc.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, readdirSync, readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { REPO_ROOT } from '../config/env';
import { TLS_ENV_NAMES } from '../config/tls';

/**
 * Ports and state dir of the bench stack: apart from the demo (7233) and the test stack (17233).
 * METALFLOW_BENCH_PORT_OFFSET moves every port, so that two checkouts can benchmark side by side.
 */
export const BENCH_STATE_DIR = process.env.METALFLOW_BENCH_STATE_DIR ?? join(REPO_ROOT, '.state', 'bench-stack');
const PORT_OFFSET = Number(process.env.METALFLOW_BENCH_PORT_OFFSET ?? 0);
if (!Number.isInteger(PORT_OFFSET) || PORT_OFFSET < 0 || PORT_OFFSET > 40_000) {
  throw new Error(`METALFLOW_BENCH_PORT_OFFSET: must be an integer from 0 to 40000, got ${JSON.stringify(process.env.METALFLOW_BENCH_PORT_OFFSET)}`);
}
export const BENCH_PORTS = {
  temporal: 21233 + PORT_OFFSET,
  temporalUi: 21234 + PORT_OFFSET,
  ironic: 21385 + PORT_OFFSET,
  sushy: 21800 + PORT_OFFSET,
  api: 21080 + PORT_OFFSET,
  // --driver k8s (bench/kube-stack.ts)
  etcd: 21379 + PORT_OFFSET,
  etcdPeer: 21380 + PORT_OFFSET,
  kubeApi: 21443 + PORT_OFFSET,
  // --agent (bench/agent-stack.ts): Ironic's http_root served by the agent launcher (beside Ironic's port as
  // stack.sh places it), where sushy tells the launcher of its systems' changes, and the fake agent's control port.
  ironicHttp: 21180 + PORT_OFFSET,
  agentNotify: 21801 + PORT_OFFSET,
  fakeAgent: 21802 + PORT_OFFSET,
};

export const BENCH_STACK_ENV: Record<string, string> = {
  METALFLOW_STATE_DIR: BENCH_STATE_DIR,
  TEMPORAL_PORT: String(BENCH_PORTS.temporal),
  TEMPORAL_UI_PORT: String(BENCH_PORTS.temporalUi),
  IRONIC_PORT: String(BENCH_PORTS.ironic),
  SUSHY_PORT: String(BENCH_PORTS.sushy),
  // Ironic's own default and what Metal3's ironic-image runs (it sets none). The dev stack's 30 s
  // (scripts/lib/stack-config.sh) is for the power tests; each sync reads every node, and at 1,000
  // nodes a 30 s sync kept a third of Ironic's core busy with no request at all and made 200
  // deploys take 1.8x as long (docs/benchmarks.md). Set it in the environment to reproduce older runs.
  IRONIC_SYNC_POWER_STATE_INTERVAL: process.env.IRONIC_SYNC_POWER_STATE_INTERVAL ?? '120',
};

/** The config stack.sh generated at the bench Ironic's last start ('' when there is none). */
export function benchIronicConf(): string {
  try {
    return readFileSync(join(BENCH_STATE_DIR, 'ironic', 'ironic.conf'), 'utf8');
  } catch {
    return '';
  }
}

/**
 * The power sync interval of the Ironic this run used, read from the config stack.sh generated at its
 * start (a stack kept from an earlier run may have been started with another value than ours).
 */
export function ironicSyncPowerStateInterval(): number | undefined {
  const m = /^sync_power_state_interval = (\d+)$/m.exec(benchIronicConf());
  return m ? Number(m[1]) : undefined;
}

export const TEMPORAL_ADDRESS = `127.0.0.1:${BENCH_PORTS.temporal}`;
export const IRONIC_URL = `http://127.0.0.1:${BENCH_PORTS.ironic}`;
export const SUSHY_URL = `http://127.0.0.1:${BENCH_PORTS.sushy}`;
export const API_URL = `http://127.0.0.1:${BENCH_PORTS.api}`;

/** The short commit of the checkout, for result files. */
export function gitCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

export type StackService = 'temporal' | 'ironic' | 'sushy';

/** One instance of scripts/stack.sh: its state dir and the environment naming its ports. */
export interface StackTarget {
  stateDir: string;
  env: Record<string, string>;
}

const BENCH_STACK: StackTarget = { stateDir: BENCH_STATE_DIR, env: BENCH_STACK_ENV };

/** scripts/stack.sh ARGS on `target`; its output (stderr goes to ours). */
export function stackAt(target: StackTarget, args: string[], extraEnv: Record<string, string> = {}): string {
  return execFileSync('bash', [join(REPO_ROOT, 'scripts', 'stack.sh'), ...args], {
    env: { ...process.env, ...target.env, ...extraEnv },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

/** Services of `target` that are running and healthy. */
export function stackRunningAt(target: StackTarget): Set<StackService> {
  let out = '';
  try {
    out = stackAt(target, ['status']);
  } catch (err) {
    out = String((err as { stdout?: string }).stdout ?? '');
  }
  const up = new Set<StackService>();
  for (const line of out.split('\n')) {
    const m = /^(temporal|ironic|sushy)\s+running\s.*healthy$/.exec(line.trim());
    if (m && !line.includes('UNHEALTHY')) up.add(m[1] as StackService);
  }
  return up;
}

/** The pid (and process group) stack.sh recorded for a service of `target`. */
export function servicePidAt(target: StackTarget, svc: StackService): number | undefined {
  const file = join(target.stateDir, 'run', `${svc}.pid`);
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/**
 * A script run without blocking the event loop (the chaos suite's proxies live
 * in the calling process and must keep answering while a service restarts).
 * Resolves with its stdout; rejects with its exit code and stderr's tail.
 */
export function runCommand(command: string, args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (err = (err + d.toString('utf8')).slice(-4000)));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${err.trim() || out.trim().slice(-2000)}`)),
    );
  });
}

/** stackAt without blocking: scripts/stack.sh ARGS on `target`. */
export const stackAtAsync = (target: StackTarget, args: string[], extraEnv: Record<string, string> = {}): Promise<string> =>
  runCommand('bash', [join(REPO_ROOT, 'scripts', 'stack.sh'), ...args], { ...target.env, ...extraEnv });

export const stack = (args: string[], extraEnv: Record<string, string> = {}): string => stackAt(BENCH_STACK, args, extraEnv);
/** `stack` without blocking (the bench's Ironic proxy lives in its process and must keep answering). */
export const stackAsync = (args: string[], extraEnv: Record<string, string> = {}): Promise<string> => stackAtAsync(BENCH_STACK, args, extraEnv);
export const stackRunning = (): Set<StackService> => stackRunningAt(BENCH_STACK);
export const servicePid = (svc: StackService): number | undefined => servicePidAt(BENCH_STACK, svc);

// ---------------------------------------------------------------- /proc ----

export interface ProcSample {
  /** Resident set now, MiB. */
  rssMiB: number;
  /** Peak resident set (VmHWM), MiB. */
  hwmMiB: number;
  /** user + system CPU seconds (including waited-for children). */
  cpuSeconds: number;
}

const CLK_TCK = 100;

function statFields(pid: number): string[] | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // comm may contain spaces: fields start after the last ')'.
    return raw.slice(raw.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

export function readProc(pid: number): ProcSample | undefined {
  const f = statFields(pid);
  if (!f) return undefined;
  // After ')': state(0) ppid(1) pgrp(2) ... utime(11) stime(12) cutime(13) cstime(14)
  const cpuSeconds = (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / CLK_TCK;
  let rssKb = 0;
  let hwmKb = 0;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    hwmKb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  } catch {
    return undefined;
  }
  return { rssMiB: rssKb / 1024, hwmMiB: hwmKb / 1024, cpuSeconds };
}

/** Sum over a process group (Ironic forks a worker; Temporal's CLI may exec the server). */
export const readProcGroup = (pgid: number): ProcSample | undefined => sumProcs((_pid, f) => Number(f[2]) === pgid);

/** A process and its children (PostgreSQL's backends each start a session of their own). */
export const readProcTree = (root: number): ProcSample | undefined => sumProcs((pid, f) => pid === root || Number(f[1]) === root);

function sumProcs(match: (pid: number, statFields: string[]) => boolean): ProcSample | undefined {
  let total: ProcSample | undefined;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const f = statFields(Number(entry));
    if (!f || !match(Number(entry), f)) continue;
    const s = readProc(Number(entry));
    if (!s) continue;
    total = total
      ? { rssMiB: total.rssMiB + s.rssMiB, hwmMiB: total.hwmMiB + s.hwmMiB, cpuSeconds: total.cpuSeconds + s.cpuSeconds }
      : s;
  }
  return total;
}

/** Is any process of the group still running? (A zombie leader nobody reaped does not count.) */
export function groupAlive(pgid: number): boolean {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const f = statFields(Number(entry));
    if (f && Number(f[2]) === pgid && f[0] !== 'Z') return true;
  }
  return false;
}

/** Samples a process's RSS every `intervalMs`, keeping the peak (VmHWM is read as well). */
export class ProcWatch {
  peakRssMiB = 0;
  last?: ProcSample;
  private timer?: NodeJS.Timeout;

  constructor(
    readonly name: string,
    readonly read: () => ProcSample | undefined,
  ) {}

  sample(): ProcSample | undefined {
    const s = this.read();
    if (s) {
      this.last = s;
      this.peakRssMiB = Math.max(this.peakRssMiB, s.rssMiB, s.hwmMiB);
    }
    return s ?? this.last;
  }

  start(intervalMs = 500): this {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.sample();
  }
}

// ------------------------------------------------------------ children ----

export interface Child {
  proc: ChildProcess;
  pid: number;
  output: string[];
  stop(): Promise<void>;
}

/** `node --import tsx <file>`: one process (the tsx CLI forks), so /proc figures are the program's own. */
/** `file`: relative to the repository, or an absolute path (a bundle of an entry point, `--process-bundle`). */
/** `args`: the program's own (a site worker's `--site NAME`). */
export function startNodeChild(name: string, file: string, env: Record<string, string>, logFile?: string, nodeArgs: string[] = [], args: string[] = []): Child {
  return startChild(name, process.execPath, [...nodeArgs, '--import', 'tsx', isAbsolute(file) ? file : join(REPO_ROOT, file), ...args], env, logFile);
}

/** `command args` as a child of the run (the agent launcher: Python), its output kept and logged as a Node child's. */
export function startChild(name: string, command: string, args: string[], env: Record<string, string>, logFile?: string): Child {
  const proc = spawn(command, args, {
    cwd: REPO_ROOT,
    // The bench stack is plain: TLS settings meant for another Temporal or Ironic stay out.
    env: { ...process.env, ...Object.fromEntries(TLS_ENV_NAMES.map((n) => [n, ''])), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const keep = (d: Buffer): void => {
    for (const line of d.toString('utf8').split('\n')) {
      if (!line) continue;
      output.push(line);
      if (output.length > 400) output.splice(0, output.length - 400);
    }
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  if (logFile) {
    const log = createWriteStream(logFile, { flags: 'a' });
    proc.stdout?.pipe(log);
    proc.stderr?.pipe(log);
  }
  if (!proc.pid) throw new Error(`could not start ${name}`);
  return {
    proc,
    pid: proc.pid,
    output,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      proc.kill('SIGTERM');
      const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 15_000).unref());
      if ((await Promise.race([exited, timeout])) === 'timeout') {
        proc.kill('SIGKILL');
        await exited;
      }
    },
  };
}

export async function waitUntil(what: string, probe: () => boolean | Promise<boolean>, timeoutMs: number, child?: Child): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await Promise.resolve().then(probe).catch(() => false)) return;
    if (child && (child.proc.exitCode !== null || child.proc.signalCode !== null)) {
      throw new Error(`${what}: the process exited (${child.proc.exitCode ?? child.proc.signalCode}):\n${child.output.slice(-30).join('\n')}`);
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${child ? `:\n${child.output.slice(-30).join('\n')}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
