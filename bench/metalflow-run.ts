/**
 * The metalflow half of a benchmark run: starts metalflow's processes (bench/metalflow-procs.ts),
 * drives the hosts through the phases (per-host API calls, fleet operations or BareMetalHosts),
 * samples the fleet at rest, and with --fleet drives the lifecycle again through fleet operations.
 * Stops its processes before it returns, so the floor that follows has the machine to itself.
 */
import type { IronicProxy } from './support/ironic-proxy';
import { PHASES, sleep, type BenchHost, type BenchImage, type Phase } from './common';
import { eventBreakdown } from './event-breakdown';
import { FleetDriver } from './fleet-driver';
import { countsDelta, writesOf, type KubeRequestCounts } from './kube-stack';
import { cpuDelta, measurePhases, type MeasureContext } from './measure';
import { startMetalflow, type MetalflowProcs } from './metalflow-procs';
import type { Options } from './options';
import type { AgentCpu, BenchResult, CpuByProcess, KubeFigures } from './report';
import type { RunStack } from './run-stack';
import { hostsOfSite, terminateSiteSentinels, type BenchSites, type MeasuredSite } from './sites';
import { temporalFigures } from './temporal';
import type { TemporalProfile } from './temporal-profile';

/** Hosts whose histories are read for the events' causes. */
const EVENT_SAMPLE_HOSTS = 20;

export interface MetalflowRunContext {
  opts: Options;
  phases: Phase[];
  hosts: BenchHost[];
  runId: string;
  runDir: string;
  secretDir: string;
  namespace: string;
  fleetNamespace: string;
  proxy: IronicProxy;
  tprofile: TemporalProfile;
  runStack: RunStack;
  phaseTimeoutMs: number;
  log: (msg: string) => void;
  /** --agent: the image served to the hosts, and the CPU of the hosts' side (sushy, the fake agent). */
  agent?: { image: BenchImage; cpuSeconds: () => AgentCpu };
  /** --sites N: the run's sites (their Ironics up, their proxies listening, the sites file written). */
  sites?: BenchSites;
}

export interface MetalflowRunResult {
  metalflow: BenchResult['metalflow'];
  fleet?: BenchResult['fleet'];
  temporalServer: BenchResult['temporalServer'];
}

/** The API server's requests of each phase, per host: by kind, and the status writes and Events among them. */
function kubeFigures(phases: Phase[], byPhase: Record<Phase, KubeRequestCounts>, hosts: number): KubeFigures {
  const byKind: Record<string, number> = {};
  const perPhase = {} as Record<Phase, number>;
  for (const p of PHASES) {
    const counts = phases.includes(p) ? (byPhase[p] ?? {}) : {};
    perPhase[p] = Object.values(counts).reduce((a, b) => a + b, 0) / hosts;
    for (const [k, v] of Object.entries(counts)) byKind[k] = (byKind[k] ?? 0) + v / hosts;
  }
  const writes = writesOf(byKind);
  return {
    requestsPerHost: Object.values(perPhase).reduce((a, b) => a + b, 0),
    requestsPerHostByPhase: perPhase,
    requestsPerHostByKind: byKind,
    statusWritesPerHost: writes.statusWrites,
    eventsPerHost: writes.events,
  };
}

export async function runMetalflow(ctx: MetalflowRunContext): Promise<MetalflowRunResult> {
  const { opts, log, tprofile, proxy } = ctx;
  const temporalAddress = tprofile.address;
  let procs: MetalflowProcs | undefined;
  let fleetDriver: FleetDriver | undefined;
  const siteNames = ctx.sites?.sites.map((x) => x.name) ?? [];
  try {
    // A site's sentinel has the same id in every run: one an earlier run left would keep this run's site workers from starting theirs.
    await terminateSiteSentinels(temporalAddress, siteNames, 'a new benchmark run starts its own');
    procs = await startMetalflow({
      driver: opts.driver === 'floor' ? 'api' : opts.driver,
      runId: ctx.runId,
      runDir: ctx.runDir,
      secretDir: ctx.secretDir,
      namespace: ctx.namespace,
      taskQueue: `bench-${ctx.runId}`,
      proxy,
      tprofile,
      runStack: ctx.runStack,
      hosts: opts.hosts,
      concurrency: opts.concurrency,
      redfish: opts.redfish,
      image: ctx.agent?.image,
      extraCpu: ctx.agent?.cpuSeconds,
      phaseTimeoutMs: ctx.phaseTimeoutMs,
      keepStack: opts.keepStack,
      log,
      workers: opts.workers,
      workflowBundle: opts.workflowBundle,
      processBundles: opts.processBundles,
      profile: opts.profile,
      ...(ctx.sites ? { sites: { file: ctx.sites.file, names: siteNames, ironicCpu: () => ctx.sites!.ironicCpu() } } : {}),
      env: {
        ...(opts.maxHistoryEvents !== undefined ? { METALFLOW_MAX_HISTORY_EVENTS: String(opts.maxHistoryEvents) } : {}),
        // The agent path inspects through the agent, as Metal3 does for a virtual-media host (metalflow's default
        // for Redfish is out-of-band inspection, which needs no agent).
        ...(ctx.agent ? { METALFLOW_INSPECTION: 'agent' } : {}),
      },
    });
    const { driver, driverOptions, kube, watches, frontWatch, cpuNow } = procs;
    const measuredSites: MeasuredSite[] | undefined = ctx.sites?.sites.map((x) => ({ name: x.name, hosts: hostsOfSite(ctx.hosts, x.name), proxy: x.proxy, ironicCpu: x.ironicCpu }));
    const mctx: MeasureContext = { phases: ctx.phases, hosts: ctx.hosts, proxy, cpuNow, log, ...(measuredSites ? { sites: measuredSites } : {}) };

    // The API server's requests by kind in each phase, read from its own counters around the phase.
    const kubeByPhase = {} as Record<Phase, KubeRequestCounts>;
    const runPhase = async (p: Phase, hs: BenchHost[]): Promise<void> => {
      const before = await kube?.requestCounts();
      await driver.runPhase(p, hs);
      if (kube && before) kubeByPhase[p] = countsDelta(before, await kube.requestCounts());
    };
    let idleRssMiB: number | undefined;
    let idleHosts: number | undefined;
    let idleCpuShare: CpuByProcess | undefined;
    const idlePhase: Phase = opts.redfish ? 'available' : 'provisioned';
    const temporalCpu0 = tprofile.cpuByPart();
    const mf = await measurePhases(
      mctx,
      opts.driver === 'fleet' ? 'metalflow (fleet operations)' : kube ? 'metalflow (BareMetalHosts)' : 'metalflow',
      runPhase,
      async (p) => {
        if (p !== idlePhase) return;
        log(`all hosts idle in ${p === 'available' ? 'available' : 'provisioned'}; sampling worker RSS for ${opts.idleSeconds} s`);
        let peak = 0;
        // The driver's looks are the benchmark's, not the fleet's: none while it is at rest.
        await driver.pauseLooks();
        const cpu0 = cpuNow();
        const t0 = Date.now();
        for (let i = 0; i < opts.idleSeconds; i++) {
          await sleep(1000);
          peak = Math.max(peak, watches.worker.rssMiB());
        }
        const secs = (Date.now() - t0) / 1000;
        // What a fleet at rest costs: Ironic's periodic tasks, the dev server, the hosts' power checks.
        idleCpuShare = cpuDelta(cpu0, cpuNow(), 1 / secs);
        idleRssMiB = peak;
        idleHosts = opts.hosts;
        driver.resumeLooks();
      },
      (p) => driver.lastReached(p),
      (p, host) => driver.reached.get(host)?.[p],
    );
    await driver.stop();
    const fleetOperations = driver instanceof FleetDriver ? driver.fleets : undefined;
    const apiServerErrors = { count: driver.serverErrors.length, byMessage: {} as Record<string, number> };
    for (const e of driver.serverErrors) {
      const k = `${e.method} ${e.phase}: ${e.status} ${e.message}`;
      apiServerErrors.byMessage[k] = (apiServerErrors.byMessage[k] ?? 0) + 1;
    }
    const temporalCpu1 = tprofile.cpuByPart();
    const temporalServer = {
      ...tprofile.info(),
      cpuSecondsByPart: Object.fromEntries(Object.entries(temporalCpu1).map(([k, v]) => [k, v - (temporalCpu0[k] ?? 0)])),
    };
    log('reading Temporal histories');
    const temporal = await temporalFigures(temporalAddress, ctx.namespace, driver.calls, opts.hosts);
    // What the events are for, from a sample of the hosts' histories (every history of a large run would take long to read).
    const causes = await eventBreakdown(temporalAddress, ctx.namespace, EVENT_SAMPLE_HOSTS);
    const historyEventsByCause = { hosts: causes.hosts, perHost: causes.byCause, taskWakes: causes.taskWakes };
    // --fleet: the same lifecycle again, on the same worker and API, with a fleet operation per phase.
    let fleet: BenchResult['fleet'];
    if (opts.fleet) {
      const fd = new FleetDriver({ ...driverOptions, namespace: ctx.fleetNamespace });
      fleetDriver = fd;
      const figures = await measurePhases(mctx, 'fleet', (p, hs) => fd.runPhase(p, hs), undefined, (p) => fd.lastReached(p));
      await fd.stop();
      fleetDriver = undefined;
      log('reading Temporal histories of the fleet run');
      fleet = { ...figures, operations: fd.fleets, temporal: await temporalFigures(temporalAddress, ctx.fleetNamespace, fd.calls, opts.hosts) };
    }
    watches.worker.stop();
    frontWatch.stop();
    for (const w of watches.siteWorkers ?? []) w.watch.stop();
    const siteWorkers = watches.siteWorkers?.map((w) => ({ site: w.site, peakRssMiB: w.watch.peakRssMiB, cpuSeconds: w.watch.last?.cpuSeconds ?? 0 }));
    const worker = { ...watches.worker.figures(), idleRssMiB, idleHosts, idleState: idlePhase, idleCpuShare };
    const frontFig = { peakRssMiB: frontWatch.peakRssMiB, cpuSeconds: frontWatch.last?.cpuSeconds ?? 0 };
    const apiFig = kube ? { peakRssMiB: 0, cpuSeconds: 0 } : frontFig;
    if (kube) await kube.clear(ctx.namespace);
    return {
      metalflow: {
        ...mf,
        temporal,
        worker,
        api: apiFig,
        apiServerErrors,
        historyEventsByCause,
        ...(fleetOperations ? { fleetOperations } : {}),
        ...(kube ? { controller: frontFig, kube: kubeFigures(ctx.phases, kubeByPhase, opts.hosts) } : {}),
        ...(siteWorkers ? { siteWorkers } : {}),
      },
      fleet,
      temporalServer,
    };
  } finally {
    await fleetDriver?.stop().catch(() => undefined);
    // The floor that follows has the machine to itself.
    await procs?.stop();
    // The site sentinels' workflows outlive their site workers (they run on the central queue): none left running.
    await terminateSiteSentinels(temporalAddress, siteNames, 'benchmark run done').catch((err: unknown) => log(`terminating the site sentinels failed: ${String(err)}`));
  }
}
