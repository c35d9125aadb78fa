/**
 * A real kube-apiserver + etcd for tests, run by the project's own
 * scripts/kube.sh on its own state folder. Test files share one instance:
 * `useKube()` in a file's beforeAll builds the binaries if needed (once per
 * machine, minutes), registers the file as a user and starts the stack if it
 * is not running; afterAll unregisters and stops the stack when the last user
 * leaves (unless METALFLOW_KEEP_KUBE=1). A whole `vitest run` is a user too
 * (holdKubeForRun, from the global setup): the stack started by its first
 * Kubernetes file stays up until the run ends. Registration and the stop
 * decision happen under one flock, so a file starting never races one stopping.
 */
import { recordNamespace } from '../support/file-names';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../config/env';
import { getInProcess } from './kube-get';

export const KUBE_STATE_DIR = process.env.METALFLOW_TEST_KUBE_STATE_DIR ?? join(REPO_ROOT, '.state', 'test-kube');
export const KUBE_PORTS = {
  etcd: Number(process.env.TEST_ETCD_PORT ?? 23379),
  etcdPeer: Number(process.env.TEST_ETCD_PEER_PORT ?? 23380),
  api: Number(process.env.TEST_KUBE_API_PORT ?? 23443),
};
export const KUBE_ENV: Record<string, string> = {
  METALFLOW_KUBE_STATE_DIR: KUBE_STATE_DIR,
  ETCD_PORT: String(KUBE_PORTS.etcd),
  ETCD_PEER_PORT: String(KUBE_PORTS.etcdPeer),
  KUBE_API_PORT: String(KUBE_PORTS.api),
};
export const KUBECONFIG = join(KUBE_STATE_DIR, 'kubeconfig');
export const KUBE_API_URL = `https://127.0.0.1:${KUBE_PORTS.api}`;
/** A fresh build on 2 cores takes several minutes; give beforeAll this much. */
export const KUBE_BUILD_TIMEOUT_MS = 60 * 60_000;

const KUBE_SH = join(REPO_ROOT, 'scripts', 'kube.sh');
const KUBE_BUILD_SH = join(REPO_ROOT, 'scripts', 'kube-build.sh');

export interface KubePaths {
  kubeVersion: string;
  etcdVersion: string;
  kubeApiserver: string;
  kubectl: string;
  etcd: string;
}

export function kubePaths(): KubePaths {
  const out = execFileSync('bash', [KUBE_BUILD_SH, '--paths'], { encoding: 'utf8' });
  const get = (k: string): string => {
    const m = new RegExp(`^${k}=(.*)$`, 'm').exec(out);
    if (!m?.[1]) throw new Error(`kube-build.sh --paths: no ${k}`);
    return m[1];
  };
  return {
    kubeVersion: get('KUBE_VERSION'),
    etcdVersion: get('ETCD_VERSION'),
    kubeApiserver: get('KUBE_APISERVER'),
    kubectl: get('KUBECTL'),
    etcd: get('ETCD'),
  };
}

/** scripts/kube-build.sh: returns at once when the binaries are built. */
export function buildKube(): void {
  execFileSync('bash', [KUBE_BUILD_SH], { stdio: 'inherit' });
}

/** scripts/kube.sh COMMAND with the test ports and state dir. */
export function kubeSh(...args: string[]): void {
  execFileSync('bash', [KUBE_SH, ...args], { env: { ...process.env, ...KUBE_ENV }, stdio: 'inherit' });
}

/**
 * A second API server + etcd of the file's own (another state dir and ports), for tests of two
 * clusters (a pivot); not shared: started here, stopped by `stop()`.
 */
export interface OwnKube {
  kubeconfig: string;
  /**
   * scripts/kube.sh COMMAND on this API server (e.g. `stop apiserver`), without blocking this process: a worker
   * running in it must go on answering its workflow tasks while the API server stops or starts.
   */
  sh(...args: string[]): Promise<void>;
  stop(): void;
}

export function startOwnKube(stateDir: string, ports: { etcd: number; etcdPeer: number; api: number }): OwnKube {
  buildKube();
  const env = { ...process.env, METALFLOW_KUBE_STATE_DIR: stateDir, ETCD_PORT: String(ports.etcd), ETCD_PEER_PORT: String(ports.etcdPeer), KUBE_API_PORT: String(ports.api) };
  const shSync = (...args: string[]): void => {
    execFileSync('bash', [KUBE_SH, ...args], { env, stdio: 'inherit' });
  };
  const sh = async (...args: string[]): Promise<void> => {
    const { stdout, stderr } = await promisify(execFile)('bash', [KUBE_SH, ...args], { env, maxBuffer: 16 * 1024 * 1024 });
    process.stdout.write(stdout);
    process.stderr.write(stderr);
  };
  shSync('start');
  return { kubeconfig: join(stateDir, 'kubeconfig'), sh, stop: () => shSync('stop') };
}

const USERS_DIR = join(KUBE_STATE_DIR, 'users');
const USERS_LOCK = join(KUBE_STATE_DIR, 'users.lock');

/** Runs a bash snippet under the users lock, with the test env. */
function locked(script: string, extraEnv: Record<string, string>): void {
  mkdirSync(USERS_DIR, { recursive: true });
  // -o: daemons started under the lock must not inherit its descriptor, or they would hold it forever.
  execFileSync('flock', ['-o', '-w', '600', USERS_LOCK, 'bash', '-euo', 'pipefail', '-c', script], {
    env: { ...process.env, ...KUBE_ENV, ...extraEnv, USERS_DIR, KUBE_SH },
    stdio: 'inherit',
  });
}

export interface KubeLease {
  release(): void;
}

/**
 * The whole test run as a user (from the global setup, in vitest's main process), without starting anything: the
 * first file's useKube() starts the stack and the last file's release() no longer stops it, so the Kubernetes
 * files that run one after another share one start (each start and stop took about 8 s). The run's teardown
 * releases it, which stops the stack if a file started it.
 */
export function holdKubeForRun(): KubeLease {
  const token = `run-${process.pid}-${randomUUID()}`;
  locked('echo "$USER_PID" >"$USERS_DIR/$USER_TOKEN"', { USER_TOKEN: token, USER_PID: String(process.pid) });
  return leaseOf(token);
}

/** Build if needed, register as a user, start the stack if needed. */
export function useKube(): KubeLease {
  buildKube();
  const token = `${process.pid}-${randomUUID()}`;
  const lease = leaseOf(token);
  try {
    locked('echo "$USER_PID" >"$USERS_DIR/$USER_TOKEN"; bash "$KUBE_SH" start', { USER_TOKEN: token, USER_PID: String(process.pid) });
  } catch (e) {
    // Unregister (and stop what was started if nobody else uses it): a
    // failed beforeAll gets no afterAll lease to release.
    lease.release();
    throw e;
  }
  return lease;
}

/** Unregisters `token`; the last user to leave stops the stack (unless METALFLOW_KEEP_KUBE=1). */
function leaseOf(token: string): KubeLease {
  let released = false;
  const lease: KubeLease = {
    release(): void {
      if (released) return;
      released = true;
      locked(
        `rm -f "$USERS_DIR/$USER_TOKEN"
         for f in "$USERS_DIR"/*; do
           [[ -e "$f" ]] || continue
           kill -0 "$(cat "$f" 2>/dev/null || echo 0)" 2>/dev/null || rm -f "$f"   # a user that died
         done
         if compgen -G "$USERS_DIR/*" >/dev/null; then
           echo "[kube] still used by $(ls "$USERS_DIR" | wc -l) test file(s) or run(s); leaving it running"
         elif [[ "\${METALFLOW_KEEP_KUBE:-}" == 1 ]]; then
           echo "[kube] METALFLOW_KEEP_KUBE=1: leaving it running"
         else
           bash "$KUBE_SH" stop
         fi`,
        { USER_TOKEN: token },
      );
    },
  };
  return lease;
}

export interface RunResult {
  status: number;
  stdout: string;
  stderr: string;
}

let cachedKubectl: string | undefined;

/**
 * A kubectl failure that says nothing about what the test checks: the API server (or etcd) was slow or
 * briefly unreachable. CI once saw `kubectl apply` of a Secret fail this way beside a busy suite.
 */
const TRANSIENT =
  /\b(Timeout|timed out|etcdserver|connection refused|connection reset|TLS handshake|unexpected EOF|ServiceUnavailable|InternalError|TooManyRequests|too many requests|i\/o timeout|the object has been modified)\b/i;
/**
 * The API server was not listening: nothing reached it, so any command may be sent again. It happens
 * while controller.test.ts restarts the shared API server beside the other Kubernetes files.
 */
const REFUSED = /connection to the server \S+ was refused|connection refused/i;
/** Commands safe to repeat as they are: a retried create could meet its own first attempt, a retried wait doubles its timeout. */
const RETRYABLE = new Set(['apply', 'get', 'patch', 'annotate', 'label']);

/** Runs the built kubectl against the test API server as admin (or the one `kubeconfig` names). */
export function kubectl(args: string[], opts: { input?: string; check?: boolean; kubeconfig?: string } = {}): RunResult {
  cachedKubectl ??= kubePaths().kubectl;
  // A namespace made here is this file's: the Ironic nodes of its hosts go when the file ends.
  if (args[0] === 'create' && args[1] === 'namespace' && args[2]) recordNamespace(args[2]);
  // A `kubectl wait --timeout=300s` must not be killed at 2 minutes (it failed with exit 1 and no message so).
  const asked = args.map((a) => /^--timeout=(\d+)s$/.exec(a)).find(Boolean);
  const processTimeoutMs = Math.max(120_000, asked ? (Number(asked[1]) + 30) * 1000 : 0);
  const once = (): RunResult => {
    const r = spawnSync(cachedKubectl!, ['--kubeconfig', opts.kubeconfig ?? KUBECONFIG, ...args], {
      input: opts.input,
      encoding: 'utf8',
      env: { ...process.env, KUBECACHEDIR: join(KUBE_STATE_DIR, 'kubectl-cache') },
      timeout: processTimeoutMs,
      maxBuffer: 256 * 1024 * 1024, // /metrics and large lists exceed the 1 MiB default
    });
    return { status: r.status ?? -1, stdout: r.stdout ?? '', stderr: r.stderr ?? String(r.error ?? '') };
  };
  // A read of one object (or of one object's Events) is answered in this process, without a kubectl start (kube-get.ts).
  let result = getInProcess(args, opts.kubeconfig ?? KUBECONFIG) ?? once();
  // Up to 5 attempts, 1+2+3+4 s apart: an API server restart takes several seconds on a loaded machine.
  for (let attempt = 1; attempt <= 4 && result.status !== 0; attempt++) {
    const why = result.stderr || result.stdout || `exit ${result.status}`;
    const refused = result.status !== -1 && REFUSED.test(why);
    if (!refused && !RETRYABLE.has(args[0] ?? '')) break;
    if (!refused && result.status !== -1 && !TRANSIENT.test(why)) break;
    // Printed so a run shows what the API server did, not only that a retry passed.
    process.stderr.write(`[kubectl] ${args.slice(0, 3).join(' ')}: transient failure (attempt ${attempt}), retrying: ${why.trim().slice(0, 400)}\n`);
    spawnSync('sleep', [String(attempt)]);
    result = once();
  }
  if (opts.check !== false && result.status !== 0) {
    throw new Error(`kubectl ${args.join(' ')} failed (${result.status}): ${result.stderr || result.stdout}`);
  }
  return result;
}

/** Polls fn every 250 ms until it returns (or resolves to) true or timeoutMs passes. */
export async function waitFor(what: string, fn: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A client of the test API server as its admin (KUBECONFIG), and the server's URL. */
export async function adminKubeRest(): Promise<{ rest: import('../../clients/kubernetes/kube-rest').KubeRest; server: string }> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const { KubeRest } = await import('../../clients/kubernetes/kube-rest');
  const kc = new KubeConfig();
  kc.loadFromFile(KUBECONFIG);
  return { rest: await KubeRest.create(kc), server: kc.getCurrentCluster()!.server };
}
