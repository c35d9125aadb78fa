/**
 * The chaos run's stack on ports and a state dir of its own: Temporal,
 * Ironic and sushy-tools through scripts/stack.sh (sushy restarted for each
 * run with the run's systems and a password of its own), a kube-apiserver
 * through scripts/kube.sh when the run has Kubernetes hosts (or one a test
 * hands over), and metalflow's processes: a worker per mode (an API-mode
 * worker reads the local secret store, a Kubernetes-mode one reads Secrets),
 * the HTTP API and the controller, all with payload encryption on.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { tokenHash } from '../../api/auth/token-file';
import { REPO_ROOT } from '../../config/env';
import { writeSushySystems, type SushySystem } from '../common';
import { stackAtAsync, stackRunningAt, type StackService, type StackTarget } from '../procs';
import type { HostMode } from './hosts';
import { chaosPorts, type ChaosOptions, type ChaosPorts } from './options';
import { kubeSh, kubectl, StackServices, Supervised, type Crash, type ProcessName, type ProcessSpec } from './supervisor';

export interface RunNames {
  runId: string;
  runDir: string;
  namespaces: Record<HostMode, string>;
  taskQueues: Record<HostMode, string>;
}

export class ChaosStack {
  readonly ports: ChaosPorts;
  readonly target: StackTarget;
  readonly services: StackServices;
  readonly sushyPassword = `chaos-sushy-${randomBytes(10).toString('hex')}`;
  readonly apiToken = randomBytes(24).toString('base64url');
  /** The API's local secret store key (the malformed-input corpus reads the store to see nothing changed). */
  readonly secretKey = randomBytes(32);
  systems: SushySystem[] = [];
  kubeconfig?: string;
  private started: StackService[] = [];
  private startedKube = false;
  private logStart = new Map<string, number>();
  private kubeEnv: Record<string, string>;

  constructor(
    private readonly opts: ChaosOptions,
    private readonly names: RunNames,
  ) {
    this.ports = chaosPorts(opts.portBase);
    this.target = {
      stateDir: opts.stateDir,
      env: {
        METALFLOW_STATE_DIR: opts.stateDir,
        TEMPORAL_PORT: String(this.ports.temporal),
        TEMPORAL_UI_PORT: String(this.ports.temporalUi),
        IRONIC_PORT: String(this.ports.ironic),
        SUSHY_PORT: String(this.ports.sushy),
      },
    };
    this.services = new StackServices(this.target, opts.log);
    this.kubeEnv = {
      METALFLOW_KUBE_STATE_DIR: opts.kubeStateDir,
      ETCD_PORT: String(this.ports.etcd),
      ETCD_PEER_PORT: String(this.ports.etcdPeer),
      KUBE_API_PORT: String(this.ports.kubeApi),
    };
  }

  get temporalAddress(): string {
    return `127.0.0.1:${this.ports.temporal}`;
  }

  get ironicUrl(): string {
    return `http://127.0.0.1:${this.ports.ironic}`;
  }

  get sushyUrl(): string {
    return `http://127.0.0.1:${this.ports.sushy}`;
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${this.ports.api}`;
  }

  private stackLogs(): string[] {
    const logs = ['temporal', 'ironic', 'sushy'].map((s) => join(this.opts.stateDir, 'logs', `${s}.log`));
    if (this.startedKube) logs.push(...['etcd', 'apiserver'].map((s) => join(this.opts.kubeStateDir, 'logs', `${s}.log`)));
    return logs;
  }

  private markLogs(): void {
    for (const f of this.stackLogs()) if (!this.logStart.has(f)) this.logStart.set(f, existsSync(f) ? statSync(f).size : 0);
  }

  /** Every log a process of this run wrote, with where this run's part begins. */
  logFiles(processLogs: string[]): { path: string; from: number }[] {
    return [...this.stackLogs().map((path) => ({ path, from: this.logStart.get(path) ?? 0 })), ...processLogs.map((path) => ({ path, from: 0 }))];
  }

  async start(withKube: boolean): Promise<void> {
    const { log } = this.opts;
    const running = stackRunningAt(this.target);
    this.markLogs();
    this.started = (['temporal', 'ironic'] as const).filter((s) => !running.has(s));
    if (this.started.length > 0) {
      log(`starting ${this.started.join(', ')} on ports ${JSON.stringify(this.ports)} (state ${this.opts.stateDir})`);
      await stackAtAsync(this.target, ['start', ...this.started]);
    }
    if (this.opts.bmcHosts > 0) {
      const file = join(this.names.runDir, 'sushy-systems.json');
      this.systems = writeSushySystems(file, this.opts.bmcHosts, { uuidPrefix: 'c4a50000', macPrefix: '52:54:02:c4', namePrefix: 'chaos-bm' });
      log(`(re)starting sushy with ${this.opts.bmcHosts} systems and this run's password`);
      await stackAtAsync(this.target, ['restart', 'sushy'], { SUSHY_SYSTEMS_FILE: file, SUSHY_POWER_DELAY: '0-1', SUSHY_PASSWORD: this.sushyPassword });
      if (!running.has('sushy')) this.started.push('sushy');
    }
    if (withKube) {
      if (this.opts.kubeconfig) {
        this.kubeconfig = this.opts.kubeconfig;
      } else {
        this.startedKube = !(await kubeSh(this.kubeEnv, 'status').then(() => true, () => false));
        if (this.startedKube) log(`starting kube-apiserver and etcd (state ${this.opts.kubeStateDir})`);
        await kubeSh(this.kubeEnv, 'start');
        this.kubeconfig = join(this.opts.kubeStateDir, 'kubeconfig');
        this.markLogs();
      }
      await kubectl(this.kubeconfig, 'apply', '-f', join(REPO_ROOT, 'k8s', 'crds'));
      await kubectl(this.kubeconfig, 'wait', '--for=condition=Established', '--timeout=120s', 'crd/baremetalhosts.metal3.io', 'crd/hardwaredata.metal3.io');
    }
  }

  /** Stops what this run started, unless --keep-stack. */
  async stop(): Promise<void> {
    if (this.opts.keepStack) return;
    if (this.started.length > 0) await stackAtAsync(this.target, ['stop', ...this.started]).catch((e: unknown) => this.opts.log(`stack stop: ${String(e)}`));
    if (this.startedKube) await kubeSh(this.kubeEnv, 'stop').catch((e: unknown) => this.opts.log(`kube stop: ${String(e)}`));
  }

  /** metalflow's processes for the modes in use, supervised; not started yet. */
  processes(modes: HostMode[], ironicUrl: string, bundle: string, crashes: Crash[]): Partial<Record<ProcessName, Supervised>> {
    const { runDir, taskQueues, namespaces } = this.names;
    const keys = join(runDir, 'payload.keys');
    writeFileSync(keys, `chaos:${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
    const tokens = join(runDir, 'api-tokens');
    writeFileSync(tokens, `${tokenHash(this.apiToken)} chaos admin:*\n`, { mode: 0o600 });
    const common = {
      TEMPORAL_ADDRESS: this.temporalAddress,
      TEMPORAL_NAMESPACE: 'default',
      IRONIC_URL: ironicUrl,
      METALFLOW_STATE_DIR: runDir,
      METALFLOW_PAYLOAD_KEYS_FILE: keys,
      METALFLOW_WORKFLOW_BUNDLE: bundle,
      METALFLOW_MAX_HISTORY_EVENTS: String(this.opts.maxHistoryEvents),
      // A Worker Deployment per round: its workers' version becomes current at start, as on a first install.
      METALFLOW_WORKER_DEPLOYMENT: `chaos-${this.names.runId}`,
      METALFLOW_SECRET_KEY: this.secretKey.toString('base64'),
      // Whatever the caller's shell has: API-mode processes must not find a kubeconfig.
      METALFLOW_KUBECONFIG: '',
      // The round's images are served on loopback, which a worker refuses unless let through.
      METALFLOW_IMAGE_FETCH_ALLOW: '127.0.0.0/8',
    };
    const apiMode = { ...common, METALFLOW_TASK_QUEUE: taskQueues.api, METALFLOW_SECRET_DIR: join(runDir, 'secrets') };
    const k8sMode = { ...common, METALFLOW_TASK_QUEUE: taskQueues.k8s, METALFLOW_KUBECONFIG: this.kubeconfig ?? '' };
    const workerReady = (out: string[]): boolean => out.some((l) => l.includes('metalflow worker on task queue'));
    const specs: ProcessSpec[] = [];
    if (modes.includes('api')) {
      specs.push(
        { name: 'worker-api', file: 'workers/main.ts', env: apiMode, logFile: join(runDir, 'worker-api.log'), ready: workerReady },
        {
          name: 'api',
          file: 'api/main.ts',
          env: {
            ...apiMode,
            METALFLOW_API_HOST: '127.0.0.1',
            METALFLOW_API_PORT: String(this.ports.api),
            METALFLOW_API_TOKENS_FILE: tokens,
            METALFLOW_API_AUDIT_LOG: join(runDir, 'api-audit.log'),
          },
          logFile: join(runDir, 'api.log'),
          ready: async () => (await request(`${this.apiUrl}/healthz`)).statusCode === 200,
        },
      );
    }
    if (modes.includes('k8s')) {
      specs.push(
        { name: 'worker-k8s', file: 'workers/main.ts', env: k8sMode, logFile: join(runDir, 'worker-k8s.log'), ready: workerReady },
        {
          name: 'controller',
          file: 'k8s/controller/main.ts',
          env: { ...k8sMode, METALFLOW_WATCH_NAMESPACE: namespaces.k8s, METALFLOW_LEASE_NAMESPACE: namespaces.k8s, METALFLOW_LEASE_SECONDS: '5' },
          logFile: join(runDir, 'controller.log'),
          ready: (out) => out.some((l) => l.includes('watching')),
        },
      );
    }
    return Object.fromEntries(specs.map((s) => [s.name, new Supervised(s, crashes, this.opts.log)]));
  }
}
