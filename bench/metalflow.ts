/**
 * Drives hosts through metalflow's public HTTP API, phase by phase, with at
 * most `concurrency` hosts in flight. A host has reached a phase when
 * Temporal's visibility shows its workflow in the target state and no
 * operation child of it running, on two consecutive looks (the time is the
 * first); "gone" is its workflow no longer running, and a host workflow that
 * ended abnormally fails the phase. One visibility list per tick for the whole
 * fleet (bench/host-look.ts): no per-host queries, which would load the worker.
 */
import { Client, type Connection } from '@temporalio/client';
import { connectTemporalClient } from '../clients/temporal/connection';
import { ApiClient } from './api-client';
import { CREDENTIALS, IMAGE, pool, type BenchHost, type BenchImage, type Phase } from './common';
import { abnormallyEndedHosts, lookAtHosts, type LookTarget } from './host-look';
import { Ticker } from './ticker';

export interface ApiCall {
  host: string;
  phase: Phase;
  method: string;
  path: string;
  status: number;
  sentAt: number;
  respondedAt: number;
}

export interface MetalflowOptions {
  apiUrl: string;
  /** Bearer token the API was given (its hash) in METALFLOW_API_TOKENS_FILE. */
  apiToken: string;
  temporalAddress: string;
  namespace: string;
  concurrency: number;
  /** How often the shared watcher lists hosts. */
  pollMs: number;
  redfish: boolean;
  /** What the hosts are provisioned with (the agent path serves its own; fake-hardware reads none). */
  image?: BenchImage;
  phaseTimeoutMs: number;
}

interface HostView {
  status: { provisioning: { state: string }; poweredOn: boolean; operationalStatus: string; errorMessage: string };
  currentOperation?: { kind: string };
}

/**
 * Hosts (`<namespace>/<name>`) with an operation child running, from one
 * visibility list of the workflows whose id starts with `prefix` (a host's is
 * `host/<namespace>/<name>`, its operations' `host/<namespace>/<name>/<seq>-<kind>`).
 */
export async function hostsWithRunningOperation(client: Client, prefix: string): Promise<Set<string>> {
  const busy = new Set<string>();
  for await (const wf of client.workflow.list({ query: `WorkflowId STARTS_WITH "${prefix}" AND ExecutionStatus = "Running"` })) {
    const [, namespace, name, op] = wf.workflowId.split('/');
    if (namespace && name && op) busy.add(`${namespace}/${name}`);
  }
  return busy;
}

export class MetalflowDriver {
  readonly calls: ApiCall[] = [];
  /** Per host, when it reached each phase (ms since epoch, as seen by the driver). */
  readonly reached = new Map<string, Partial<Record<Phase, number>>>();
  protected readonly api: ApiClient;
  private listed = new Map<string, string>();
  /** Hosts with an operation child running, as of the last tick. */
  private busy = new Set<string>();
  private connection?: Connection;
  private listedAt = 0;
  /** What the waiting hosts wait for (one phase at a time); the look lists only what can tell them. */
  private lookTarget: LookTarget = 'available';
  /** Hosts in until(): the only ones a look asks about. */
  private readonly waiting = new Set<string>();
  /** The hosts the last look asked about (a host absent from it is gone only if it was asked about). */
  private lookedFor = new Set<string>();
  private ticker?: Ticker;

  constructor(protected readonly opts: MetalflowOptions) {
    this.api = new ApiClient(opts.apiUrl, opts.apiToken, Math.max(16, opts.concurrency + 8));
  }

  /** API answers of 5xx, and requests with no answer (status 0); each was sent again. */
  readonly serverErrors: { host: string; phase: Phase; method: string; status: number; message: string }[] = [];

  protected async call(host: BenchHost, phase: Phase, method: 'PUT' | 'DELETE', path: string, body?: unknown): Promise<void> {
    // The first attempt's send time is when the user asked; kept for the latency figures.
    const sentAt = Date.now();
    const r = await this.api.send(method, path, body, {
      onRetry: (status, message) => this.serverErrors.push({ host: host.name, phase, method, status, message }),
    });
    this.calls.push({ host: host.name, phase, method, path, status: r.status, sentAt, respondedAt: r.respondedAt });
    if (r.status >= 300) throw new Error(`${method} ${path}: HTTP ${r.status} ${r.json?.message ?? ''}`);
  }

  protected hostPath(host: BenchHost): string {
    return `/v1/namespaces/${this.opts.namespace}/hosts/${host.name}`;
  }

  /** One visibility list per tick for all hosts (bench/host-look.ts), instead of one query per host. */
  protected startTicker(): void {
    this.ticker ??= new Ticker(async () => {
      // Nobody waiting, nothing to ask (between phases, and while the hosts are sent their calls).
      if (this.waiting.size === 0) return;
      const client = await this.temporal();
      const waiting = [...this.waiting];
      const at = Date.now();
      const look = await lookAtHosts(client, this.opts.namespace, this.lookTarget, waiting);
      this.listed = look.states;
      this.busy = look.busy;
      this.lookedFor = new Set(waiting);
      this.listedAt = at;
    }, this.opts.pollMs);
    this.ticker.start();
  }

  protected async temporal(): Promise<Client> {
    this.connection ??= await connectTemporalClient({ address: this.opts.temporalAddress });
    return new Client({ connection: this.connection });
  }

  /** No looks while the benchmark samples the fleet at rest (they would be counted as its cost). */
  async pauseLooks(): Promise<void> {
    await this.ticker?.pause();
  }

  resumeLooks(): void {
    this.ticker?.resume();
  }

  /** After a phase: a host workflow that failed or was terminated is not a host that reached anything. */
  protected async checkNoneEndedAbnormally(phase: Phase): Promise<void> {
    const ended = await abnormallyEndedHosts(await this.temporal(), this.opts.namespace);
    if (ended.length > 0) throw new Error(`phase ${phase}: ${ended.length} host workflow(s) ended abnormally: ${ended.slice(0, 5).join(', ')}`);
  }

  protected nextTick(): Promise<void> {
    return this.ticker!.next();
  }

  async stop(): Promise<void> {
    await this.ticker?.stop();
    await this.connection?.close();
    await this.api.close();
  }

  protected async until(host: BenchHost, phase: Phase, target: string | 'gone'): Promise<void> {
    const deadline = Date.now() + this.opts.phaseTimeoutMs;
    this.lookTarget = target;
    this.waiting.add(host.name);
    try {
      await this.waitFor(host, phase, target, deadline);
    } finally {
      this.waiting.delete(host.name);
    }
  }

  private async waitFor(host: BenchHost, phase: Phase, target: string | 'gone', deadline: number): Promise<void> {
    const issuedAt = Date.now();
    let seenAt: number | undefined;
    for (;;) {
      await this.nextTick();
      if (this.listedAt < issuedAt || !this.lookedFor.has(host.name)) continue;
      const listed = this.listed.get(host.name);
      const there = target === 'gone' ? listed === undefined : listed === target && !this.busy.has(host.name);
      if (there && seenAt !== undefined) {
        const reached = this.reached.get(host.name) ?? {};
        reached[phase] = seenAt;
        this.reached.set(host.name, reached);
        return;
      }
      seenAt = there ? this.listedAt : undefined;
      if (Date.now() > deadline) {
        const r = await this.api.request('GET', this.hostPath(host)).catch(() => undefined);
        const v = r?.json as HostView | undefined;
        throw new Error(
          `host ${host.name} did not reach ${target} within ${this.opts.phaseTimeoutMs / 1000} s: listed "${listed}", ` +
            `state "${v?.status?.provisioning?.state}", operation ${v?.currentOperation?.kind ?? 'none'}, error "${v?.status?.errorMessage ?? ''}"`,
        );
      }
    }
  }

  /** When the last host reached the phase (first look), for the phase's wall time. */
  lastReached(phase: Phase): number {
    let last = 0;
    for (const r of this.reached.values()) last = Math.max(last, r[phase] ?? 0);
    return last;
  }

  async runPhase(phase: Phase, hosts: BenchHost[]): Promise<void> {
    this.startTicker();
    await pool(hosts, this.opts.concurrency, async (host) => {
      switch (phase) {
        case 'available':
          await this.call(host, phase, 'PUT', this.hostPath(host), {
            spec: {
              bmc: { address: host.bmcAddress, credentialsName: `${host.name}-bmc-secret` },
              bootMACAddress: host.mac,
              online: true,
              ...(this.opts.redfish ? { automatedCleaningMode: 'disabled' } : {}),
              // --sites: the host's site (bench/sites.ts); none is the default site.
              ...(host.site ? { site: host.site } : {}),
            },
            credentials: CREDENTIALS,
            userData: host.userData,
          });
          return this.until(host, phase, 'available');
        case 'provisioned':
          await this.call(host, phase, 'PUT', `${this.hostPath(host)}/image`, this.opts.image ?? IMAGE);
          return this.until(host, phase, 'provisioned');
        case 'deprovisioned':
          await this.call(host, phase, 'DELETE', `${this.hostPath(host)}/image`);
          return this.until(host, phase, 'available');
        case 'gone':
          await this.call(host, phase, 'DELETE', this.hostPath(host));
          return this.until(host, phase, 'gone');
      }
    });
    await this.checkNoneEndedAbnormally(phase);
  }
}
