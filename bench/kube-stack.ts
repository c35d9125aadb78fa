/**
 * The kube-apiserver and etcd of `--driver k8s`: scripts/kube.sh on the bench's
 * own state folder and ports (beside the bench stack's, moved by
 * METALFLOW_BENCH_PORT_OFFSET too), built first by scripts/kube-build.sh
 * (which returns at once when the binaries are there; on a clean clone it
 * builds them from Go modules, several minutes). What the run counts of them:
 * each one's CPU (its process group) and the API server's requests by kind,
 * from its own `apiserver_request_total`, so the status writes and Events of
 * every writer (worker, controller) are counted without a proxy in their way.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../config/env';
import { BENCH_PORTS, BENCH_STATE_DIR, readProcGroup, runCommand } from './procs';

export const BENCH_KUBE_STATE_DIR = join(BENCH_STATE_DIR, 'kube');
const KUBE_ENV = {
  METALFLOW_KUBE_STATE_DIR: BENCH_KUBE_STATE_DIR,
  ETCD_PORT: String(BENCH_PORTS.etcd),
  ETCD_PEER_PORT: String(BENCH_PORTS.etcdPeer),
  KUBE_API_PORT: String(BENCH_PORTS.kubeApi),
};
const KUBE_SH = join(REPO_ROOT, 'scripts', 'kube.sh');
const KUBE_BUILD_SH = join(REPO_ROOT, 'scripts', 'kube-build.sh');

export type KubeService = 'apiserver' | 'etcd';

/** API server requests by kind (`VERB resource[/subresource]`, with the code when it is not 2xx): count. */
export type KubeRequestCounts = Record<string, number>;

/** `apiserver_request_total` from the API server's /metrics text, summed by kind. */
export function parseRequestCounts(metrics: string): KubeRequestCounts {
  const out: KubeRequestCounts = {};
  for (const line of metrics.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (!labels.verb || !labels.resource || !Number.isFinite(value)) continue;
    const code = labels.code && !labels.code.startsWith('2') ? ` ${labels.code}` : '';
    const kind = `${labels.verb} ${labels.resource}${labels.subresource ? `/${labels.subresource}` : ''}${code}`;
    out[kind] = (out[kind] ?? 0) + value;
  }
  return out;
}

export const countsDelta = (a: KubeRequestCounts, b: KubeRequestCounts): KubeRequestCounts =>
  Object.fromEntries(Object.entries(b).map(([k, v]) => [k, v - (a[k] ?? 0)]).filter(([, v]) => (v as number) > 0));

/** The status writes and Events among a phase's requests (any writer: worker and controller). */
export function writesOf(counts: KubeRequestCounts): { statusWrites: number; events: number } {
  let statusWrites = 0;
  let events = 0;
  for (const [kind, n] of Object.entries(counts)) {
    const [verb = '', resource = '', code] = kind.split(' ');
    if (code) continue;
    if ((verb === 'PATCH' || verb === 'PUT' || verb === 'APPLY') && resource === 'baremetalhosts/status') statusWrites += n;
    // A repeated Event is a PATCH of its count (client-go's way; metalflow's writers POST each one).
    if ((verb === 'POST' || verb === 'PATCH') && resource === 'events') events += n;
  }
  return { statusWrites, events };
}

export class BenchKube {
  readonly kubeconfig = join(BENCH_KUBE_STATE_DIR, 'kubeconfig');
  /** Did this run start the API server (and so stops it)? */
  started = false;
  private kubectlPath?: string;

  constructor(private readonly log: (msg: string) => void) {}

  private sh(...args: string[]): Promise<string> {
    return runCommand('bash', [KUBE_SH, ...args], KUBE_ENV);
  }

  private async kubectl(...args: string[]): Promise<string> {
    this.kubectlPath ??= /^KUBECTL=(.*)$/m.exec(await runCommand('bash', [KUBE_BUILD_SH, '--paths'], {}))?.[1];
    if (!this.kubectlPath) throw new Error('scripts/kube-build.sh --paths named no kubectl');
    return runCommand(this.kubectlPath, ['--kubeconfig', this.kubeconfig, ...args], { KUBECACHEDIR: join(BENCH_KUBE_STATE_DIR, 'kubectl-cache') });
  }

  /** Builds if needed, starts what is not running, applies the CRDs and creates the run's namespace. */
  async start(namespace: string): Promise<void> {
    if ((await runCommand('bash', [KUBE_BUILD_SH, '--check'], {}).then(() => true, () => false)) === false) {
      this.log('building kube-apiserver, kubectl and etcd from Go modules (scripts/kube-build.sh; once per machine, several minutes on 2 cores)');
      await runCommand('bash', [KUBE_BUILD_SH], {}).catch((err: unknown) => {
        throw new Error(`scripts/kube-build.sh failed; run it by hand to see why (it needs Go >= 1.26 or network access to the Go module proxy): ${String(err)}`);
      });
    }
    this.started = !(await this.sh('status').then(() => true, () => false));
    if (this.started) this.log(`starting kube-apiserver and etcd on ports ${JSON.stringify(KUBE_ENV)}`);
    await this.sh('start');
    await this.kubectl('apply', '-f', join(REPO_ROOT, 'k8s', 'crds'));
    await this.kubectl('wait', '--for=condition=Established', '--timeout=120s', 'crd/baremetalhosts.metal3.io', 'crd/hardwaredata.metal3.io');
    await this.kubectl('create', 'namespace', namespace);
  }

  /** The run's Secrets (the hosts are gone with the run; a namespace is never removed without a controller-manager). */
  async clear(namespace: string): Promise<void> {
    await this.kubectl('delete', 'secrets', '--all', '-n', namespace, '--wait=false').catch((err: unknown) => this.log(`secrets of ${namespace} not deleted: ${String(err)}`));
  }

  /** Stops what this run started; synchronous, as the run's other teardown (also on SIGINT, before it exits). */
  stop(): void {
    if (!this.started) return;
    this.started = false;
    this.log('stopping kube-apiserver and etcd, started by this run');
    try {
      execFileSync('bash', [KUBE_SH, 'stop'], { env: { ...process.env, ...KUBE_ENV }, stdio: ['ignore', 'ignore', 'inherit'] });
    } catch (err) {
      this.log(`kube stop failed: ${String(err)}`);
    }
  }

  private pid(svc: KubeService): number | undefined {
    const file = join(BENCH_KUBE_STATE_DIR, 'run', `${svc}.pid`);
    if (!existsSync(file)) return undefined;
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  }

  /** CPU seconds of each so far (each leads a process group of its own). */
  cpuSeconds(svc: KubeService): number {
    const pid = this.pid(svc);
    return pid === undefined ? 0 : (readProcGroup(pid)?.cpuSeconds ?? 0);
  }

  async requestCounts(): Promise<KubeRequestCounts> {
    return parseRequestCounts(await this.kubectl('get', '--raw', '/metrics'));
  }
}
