/**
 * `npm run bench -- --sites N` (docs/sites.md, *Benchmark*): the same host lifecycle spread over N sites,
 * each with an Ironic of its own (scripts/stack.sh on its own port and state folder, with the bench
 * Ironic's settings) behind a counting proxy of its own, and a site worker of its own
 * (`npm run worker -- --site NAME`); the hosts are assigned to the sites round-robin and name theirs in
 * `spec.site`, and the central worker runs every host workflow. The default site keeps the bench stack's
 * Ironic (the central worker's, with no host of the run). The floor drives each site's Ironic directly,
 * the same hosts at the same sites, under the one `--concurrency`.
 *
 * `--sites 1` (the default) is the single-site run it always was: no sites file, no site worker.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { connectTemporalClient } from '../clients/temporal/connection';
import { powerSentinelWorkflowId } from '../contracts/power-sentinel';
import { siteTaskQueue } from '../model/site';
import { IronicProxy } from './support/ironic-proxy';
import { pool, PHASES, type BenchHost, type Phase } from './common';
import { FloorDriver, type FloorOptions } from './floor';
import { BENCH_PORTS, BENCH_STACK_ENV, BENCH_STATE_DIR, readProcGroup, servicePidAt, stackAt, stackAtAsync, stackRunningAt, type StackTarget } from './procs';
import type { RunStack } from './run-stack';

/** Site names of a run with `n` sites: none for one (the default site alone), else `site-1` .. `site-N`. */
export const siteNames = (n: number): string[] => (n <= 1 ? [] : Array.from({ length: n }, (_, i) => `site-${i + 1}`));

/** Host i goes to site i mod N (round-robin), named in its `site`; with no sites the hosts are left as they are. */
export function assignSites(hosts: BenchHost[], sites: readonly string[]): BenchHost[] {
  if (sites.length === 0) return hosts;
  return hosts.map((h, i) => ({ ...h, site: sites[i % sites.length]! }));
}

/** The hosts of one site, in their order. */
export const hostsOfSite = (hosts: readonly BenchHost[], site: string): BenchHost[] => hosts.filter((h) => h.site === site);

/**
 * The Ironic port of the `i`-th site (from 0): right above the bench Ironic's, so inside the bench's
 * port window at every METALFLOW_BENCH_PORT_OFFSET (stack.sh puts its unbound http_url port 205 below).
 */
export const siteIronicPort = (i: number): number => BENCH_PORTS.ironic + 1 + i;

/**
 * scripts/stack.sh for the `i`-th site's Ironic: the bench stack's settings (Ironic's own power sync
 * interval, no test-stack patches), its own state folder and port. stack.sh wants its other services'
 * ports to differ from Ironic's: the bench stack's are given, and only Ironic is ever started here.
 */
export function siteStackTarget(name: string, i: number, stateDir = BENCH_STATE_DIR): StackTarget {
  const dir = join(stateDir, 'sites', name);
  return { stateDir: dir, env: { ...BENCH_STACK_ENV, METALFLOW_STATE_DIR: dir, IRONIC_PORT: String(siteIronicPort(i)) } };
}

/** `METALFLOW_SITES_FILE` of the run: every site's Ironic is its counting proxy. */
export const sitesFileContent = (sites: readonly { name: string; ironicUrl: string }[]): { sites: { name: string; ironic: { url: string } }[] } => ({
  sites: sites.map((s) => ({ name: s.name, ironic: { url: s.ironicUrl } })),
});

export interface BenchSite {
  name: string;
  /** The site's Ironic, straight (cleanup, the floor's failures). */
  ironicUrl: string;
  /** In front of the site's Ironic: what the site worker and the floor use, counted. */
  proxy: IronicProxy;
  target: StackTarget;
  /** CPU seconds of the site's Ironic (its process group) so far. */
  ironicCpu(): number;
}

/** The run's sites: their Ironics (started by the run when not running), proxies and the sites file. */
export class BenchSites {
  readonly sites: BenchSite[];
  readonly file: string;
  private readonly started: BenchSite[] = [];

  constructor(
    names: readonly string[],
    runDir: string,
    private readonly log: (msg: string) => void,
  ) {
    this.file = join(runDir, 'sites.json');
    this.sites = names.map((name, i) => {
      const target = siteStackTarget(name, i);
      const ironicUrl = `http://127.0.0.1:${siteIronicPort(i)}`;
      return { name, ironicUrl, proxy: new IronicProxy(ironicUrl), target, ironicCpu: () => readProcGroup(servicePidAt(target, 'ironic') ?? -1)?.cpuSeconds ?? 0 };
    });
  }

  /** Every site's Ironic up (an Ironic this run starts begins with an empty database), its proxy, and the sites file. */
  async start(runStack: RunStack): Promise<void> {
    runStack.alsoStop(() => this.stopIronics());
    // Side by side: each Ironic's start (its database schema, its first answer) is some 20 s of one core.
    await Promise.all(
      this.sites.map(async (s) => {
        mkdirSync(s.target.stateDir, { recursive: true });
        if (stackRunningAt(s.target).has('ironic')) {
          this.log(`site ${s.name}: its Ironic already running at ${s.ironicUrl}`);
        } else {
          this.log(`site ${s.name}: starting its Ironic at ${s.ironicUrl} (state ${s.target.stateDir})`);
          this.started.push(s);
          await stackAtAsync(s.target, ['start', 'ironic', '--empty-db']);
        }
        await s.proxy.start();
      }),
    );
    writeFileSync(this.file, `${JSON.stringify(sitesFileContent(this.sites.map((s) => ({ name: s.name, ironicUrl: s.proxy.url }))), null, 2)}\n`);
  }

  /** CPU seconds of every site's Ironic so far. */
  ironicCpu(): number {
    return this.sites.reduce((sum, s) => sum + s.ironicCpu(), 0);
  }

  async stopProxies(): Promise<void> {
    await Promise.all(this.sites.map((s) => s.proxy.stop().catch(() => undefined)));
  }

  /** The Ironics this run started (not with --keep-stack: RunStack calls it only then). */
  private stopIronics(): void {
    for (const s of this.started.splice(0)) {
      this.log(`site ${s.name}: stopping its Ironic`);
      try {
        stackAt(s.target, ['stop', 'ironic']);
      } catch (err) {
        this.log(`site ${s.name}: Ironic stop failed: ${String(err)}`);
      }
    }
  }
}

/**
 * Each site's power sentinel is `power-sentinel/site/<name>` whatever the run (the default site's is named
 * after the run's task queue), and a site worker finds one still running and leaves it: one a run left
 * behind (the dev server keeps its database) would stay on that run's task queue, which no worker polls.
 * Terminated before the site workers start and after they stop.
 */
export async function terminateSiteSentinels(temporalAddress: string, names: readonly string[], reason: string): Promise<void> {
  if (names.length === 0) return;
  const connection = await connectTemporalClient({ address: temporalAddress });
  try {
    const client = new Client({ connection });
    for (const name of names) {
      await client.workflow
        .getHandle(powerSentinelWorkflowId(siteTaskQueue(name)))
        .terminate(reason)
        .catch(() => undefined);
    }
  } finally {
    await connection.close();
  }
}

/** One site's figures of a driver's lifecycle (DriverFigures.bySite). */
export interface SiteDriverFigures {
  site: string;
  hosts: number;
  /** From the phase's start to the last of the site's hosts there, ms. */
  phaseMs: Record<Phase, number>;
  ironicRequestsPerHost: number;
  ironicRequestsPerHostByPhase: Record<Phase, number>;
  /** CPU seconds of the site's Ironic in each phase. */
  ironicCpuSecondsByPhase: Record<Phase, number>;
}

/** What measurePhases reads of one site in each phase. */
export interface MeasuredSite {
  name: string;
  hosts: readonly BenchHost[];
  proxy: Pick<IronicProxy, 'requests'>;
  ironicCpu: () => number;
}

/** One phase's sample of a site: when it began, the site's Ironic CPU then and after, its requests. */
export interface SitePhaseSample {
  startedAt: number;
  cpu0: number;
  cpu1: number;
  requests: number;
  /** When each of the site's hosts reached the phase (undefined: the driver did not say). */
  reachedAt: (number | undefined)[];
  /** When the phase ended for the whole run (the fallback for a host the driver did not time). */
  endedAt: number;
}

/** Accumulates a site's figures phase by phase (pure: the samples are taken by measurePhases). */
export function siteFigures(site: string, hosts: number, samples: Partial<Record<Phase, SitePhaseSample>>): SiteDriverFigures {
  const phaseMs = {} as Record<Phase, number>;
  const byPhase = {} as Record<Phase, number>;
  const cpu = {} as Record<Phase, number>;
  for (const p of PHASES) {
    const s = samples[p];
    if (!s) {
      phaseMs[p] = 0;
      byPhase[p] = 0;
      cpu[p] = 0;
      continue;
    }
    const last = s.reachedAt.length === 0 ? s.endedAt : Math.max(...s.reachedAt.map((t) => t ?? s.endedAt));
    phaseMs[p] = last - s.startedAt;
    byPhase[p] = hosts > 0 ? s.requests / hosts : 0;
    cpu[p] = s.cpu1 - s.cpu0;
  }
  return {
    site,
    hosts,
    phaseMs,
    ironicRequestsPerHost: Object.values(byPhase).reduce((a, b) => a + b, 0),
    ironicRequestsPerHostByPhase: byPhase,
    ironicCpuSecondsByPhase: cpu,
  };
}

/** A site's Ironic CPU seconds per host lifecycle (the phases run, over the site's hosts). */
export const siteIronicCpuPerHost = (f: SiteDriverFigures, phases: readonly Phase[]): number =>
  f.hosts > 0 ? phases.reduce((a, p) => a + f.ironicCpuSecondsByPhase[p], 0) / f.hosts : 0;

/**
 * The floor over the sites: one FloorDriver per site, on the site's proxy, and one pool of `concurrency`
 * over all hosts (as the API driver keeps `--concurrency` in flight whatever the sites), each host on
 * its site's Ironic. When each host finished a phase is kept, for the per-site times.
 */
export class SitesFloor {
  private readonly drivers = new Map<string, FloorDriver>();
  private readonly reached = new Map<string, Partial<Record<Phase, number>>>();

  constructor(
    sites: readonly { name: string; ironicUrl: string }[],
    private readonly opts: Omit<FloorOptions, 'ironicUrl'>,
  ) {
    for (const s of sites) this.drivers.set(s.name, new FloorDriver({ ...opts, ironicUrl: s.ironicUrl }));
  }

  async runPhase(phase: Phase, hosts: BenchHost[]): Promise<void> {
    await pool(hosts, this.opts.concurrency, async (host) => {
      const driver = this.drivers.get(host.site ?? '');
      if (!driver) throw new Error(`floor: host ${host.name} has no site of the run (${host.site ?? 'none'})`);
      await driver.runHost(phase, host);
      this.reached.set(host.name, { ...this.reached.get(host.name), [phase]: Date.now() });
    });
  }

  reachedAt(phase: Phase, host: string): number | undefined {
    return this.reached.get(host)?.[phase];
  }

  get retries(): number {
    return [...this.drivers.values()].reduce((a, d) => a + d.retries, 0);
  }

  get transientResends(): number {
    return [...this.drivers.values()].reduce((a, d) => a + d.transientResends, 0);
  }

  get rejectedReplans(): number {
    return [...this.drivers.values()].reduce((a, d) => a + d.rejectedReplans, 0);
  }
}
