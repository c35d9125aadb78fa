/**
 * `npm run bench`: N hosts through create -> available -> provisioned ->
 * available -> gone through metalflow's HTTP API (worker and API as child
 * processes), then the same through the floor driver (same Ironic calls, no
 * Temporal). Prints a table and writes
 * bench/results/<date>-<commit>-<driver>[-postgres]-<run id>.json (two runs of one commit on one
 * day used to share a name, and the second overwrote the first).
 *
 *   npm run bench -- [--hosts 100] [--concurrency N] [--redfish | --agent] [--scale]
 *                    [--floor-poll-ms 100] [--no-floor] [--idle-seconds S] [--max-history-events N]
 *                    [--out FILE] [--keep-stack] [--profile] [--temporal dev|postgres] [--workers N] [--fleet]
 *                    [--driver api|fleet|floor|k8s] [--workflow-bundle FILE]
 *                    [--process-bundle worker=FILE] [--process-bundle api=FILE] [--sites N]
 *
 * --max-history-events lowers the host workflows' continue-as-new threshold
 * (METALFLOW_MAX_HISTORY_EVENTS) so that a run shows continue-as-new at
 * fleet scale; a lifecycle is ~115 events, far below the default 4,000.
 * --scale is the 1,000-host run: --hosts 1000 --concurrency 200 --no-floor
 * --idle-seconds 60 --max-history-events 60, each overridable.
 * METALFLOW_WORKER_* variables in the environment reach the worker and are
 * recorded in the result.
 *
 * Starts its own stack (scripts/stack.sh; Temporal 21233, UI 21234, Ironic
 * 21385, sushy 21800, state .state/bench-stack) when it is not running, and
 * stops what it started unless --keep-stack (also when the run fails or is
 * interrupted). --temporal postgres runs the workflows on Temporal server on
 * PostgreSQL (scripts/temporal-pg.sh, ports 21500.., see
 * bench/temporal-profile.ts) instead of the dev server, with --workers 2 (two
 * worker processes on the run's task queue) unless --workers says otherwise.
 * --fleet runs the lifecycle a second time (namespace fleet-<id>, same worker
 * and API) with one fleet operation per phase (provision, deprovision, delete;
 * hosts are still created one PUT each) and prints its phase times beside the
 * per-host API driver's and the floor's (bench/fleet-driver.ts). --driver
 * fleet drives the only metalflow lifecycle that way instead (its figures,
 * targets and ratios are the fleet's). --driver floor runs the floor alone (no
 * worker, no API; the result has only the floor's figures), so a 1,000-host
 * comparison can be three runs of one commit, each within a working session:
 * `--hosts 1000 --concurrency 200 --no-floor`, the same with `--driver fleet`,
 * and with `--driver floor`; `compare` puts them side by side.
 * --driver k8s drives the lifecycle as Metal3 users do, through BareMetalHosts
 * (a BMC Secret, a user-data Secret and the object; spec.image set, cleared;
 * the object deleted) on a kube-apiserver and etcd of the run's own
 * (scripts/kube.sh, state .state/bench-stack/kube, etcd 21379/21380,
 * kube-apiserver 21443; built first by scripts/kube-build.sh when missing),
 * with the controller in place of the API: the controller, kube-apiserver and
 * etcd count in the orchestration CPU, and the API server's requests per host
 * (status writes and Events among them) are printed by kind
 * (bench/k8s-driver.ts, bench/kube-stack.ts).
 * --workflow-bundle FILE runs the worker on a workflow bundle already built from
 * this checkout (the test run's) instead of bundling the workflows again;
 * --process-bundle worker=FILE (or api=FILE) starts that process from a bundle
 * of its entry point already built (the test run's) instead of through tsx.
 * The bench stack's sushy is started only with --redfish or --agent.
 * --agent takes the whole lifecycle through Ironic's agent path, for metalflow
 * and the floor: Redfish virtual media on sushy-tools fake systems (one per
 * host), the fake agent (bench/support/fake-agent.ts, one process for every
 * host) booted by the agent launcher (scripts/agent/launcher.py --fake-agent),
 * agent inspection, automated cleaning, direct deploy of an image served on
 * loopback, and cleaning on deprovision (bench/agent-stack.ts); Ironic and
 * sushy of a kept stack are restarted on the agent path's settings.
 * --sites N spreads the hosts round-robin over N sites (site-1 .. site-N; spec.site), each with an Ironic
 * of its own (scripts/stack.sh on the bench Ironic's port + 1 .. + N, state .state/bench-stack/sites/<name>,
 * the bench Ironic's settings, an empty database when the run starts it) behind a counting proxy of its
 * own, and a site worker of its own (workers/main.ts --site NAME); the central worker runs the host
 * workflows, the bench stack's Ironic is the default site's. The floor drives each site's Ironic
 * directly, the same hosts, one --concurrency over all. Prints each site's phase times, Ironic requests
 * and Ironic CPU per host, and orchestration CPU per host lifecycle (Temporal + central worker + site
 * workers + API) beside its target: that it does not grow with N. With the per-host API driver or
 * --driver floor, fake-hardware hosts only; --sites 1 (the default) is the single-site run (bench/sites.ts).
 * `npm run bench -- cleanup [--temporal postgres] <namespace>...` removes what
 * a failed run left behind. `npm run bench -- compare <result.json>...` prints
 * the figures of several runs side by side (bench/compare.ts).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { loadConfig, RECOMMENDED_MALLOC_ARENA_MAX, REPO_ROOT } from '../config/env';
import { IronicProxy } from './support/ironic-proxy';
import { cleanupNamespaces, removeLeftoverNodes } from './cleanup';
import { compareFiles } from './compare';
import { makeHosts, PHASES, writeSushySystems, type Phase, type SushySystem } from './common';
import { FAKE_AGENT_SETTINGS, startAgentPeers, type AgentPeers, type LauncherEventCounts } from './agent-stack';
import { FloorDriver } from './floor';
import { measurePhases } from './measure';
import { cpuReader } from './metalflow-procs';
import { runMetalflow } from './metalflow-run';
import { BENCH_PORTS, gitCommit, BENCH_STATE_DIR, IRONIC_URL, ironicSyncPowerStateInterval, SUSHY_URL, TEMPORAL_ADDRESS, stack } from './procs';
import { evaluateTargets, formatFloorOnly, formatTable, isFloorOnly, resultFileName, type BenchResult, type FloorOnlyResult } from './report';
import { parseOptions } from './options';
import { RunStack } from './run-stack';
import { parseTemporalProfile, temporalProfile } from './temporal-profile';
import { assignSites, BenchSites, hostsOfSite, siteNames, SitesFloor } from './sites';

/** The agent path's least time for a phase (see phaseTimeoutMs below). */
const AGENT_PHASE_TIMEOUT_MS = 1_800_000;

const log = (msg: string): void => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}`);

/** A sushy systems file with one fake system per host (redfish mode). */
function redfishSystems(n: number): { file: string; systems: SushySystem[] } {
  const file = join(BENCH_STATE_DIR, `sushy-systems-${n}.json`);
  return { file, systems: writeSushySystems(file, n, { uuidPrefix: 'be4c0000', macPrefix: '52:54:01:be', namePrefix: 'bench-bm' }) };
}

async function sushySystemCount(): Promise<number> {
  const res = await request(`${SUSHY_URL}/redfish/v1/Systems`, {
    headers: { authorization: `Basic ${Buffer.from('admin:password').toString('base64')}` },
  });
  const body = (await res.body.json()) as { 'Members@odata.count'?: number };
  return body['Members@odata.count'] ?? 0;
}

/** The run's host workflows and its nodes in every Ironic of the run (with --sites, each site's too). */
const cleanup = async (temporalAddress: string, sites: BenchSites | undefined, ...namespaces: string[]): Promise<void> => {
  const kept = await cleanupNamespaces(temporalAddress, IRONIC_URL, namespaces, 'benchmark run failed');
  for (const site of sites?.sites ?? []) kept.push(...(await cleanupNamespaces(temporalAddress, site.ironicUrl, namespaces, 'benchmark run failed')));
  // The next run's start deletes them (removeLeftoverNodes), once the stack it starts has released them.
  for (const k of kept) console.error(`[bench] Ironic would not delete ${k}`);
};

async function main(): Promise<void> {
  // The children inherit it (glibc reads it at their start): workers and API as shipped, and the floor's and
  // metalflow's Ironic alike, so both drivers run on the same setting.
  process.env.MALLOC_ARENA_MAX ??= RECOMMENDED_MALLOC_ARENA_MAX;
  if (process.argv[2] === 'compare') {
    console.log(compareFiles(process.argv.slice(3)));
    return;
  }
  if (process.argv[2] === 'cleanup') {
    // npm run bench -- cleanup <namespace>...: what a failed run left behind (host namespaces bench-<id>, floor-<id>).
    const args = process.argv.slice(3);
    const pg = args[0] === '--temporal' ? parseTemporalProfile(args[1]) : 'dev';
    await cleanup(pg === 'dev' ? TEMPORAL_ADDRESS : temporalProfile(pg).address, undefined, ...args.slice(args[0] === '--temporal' ? 2 : 0));
    return;
  }
  const opts = parseOptions(process.argv.slice(2), new URL(import.meta.url));
  const runId = randomBytes(3).toString('hex');
  // The code that runs is the checkout at the start: a commit made while a long run goes on must not be its label.
  const commit = gitCommit();
  const namespace = `bench-${runId}`;
  const taskQueue = `bench-${runId}`;
  const fleetNamespace = `fleet-${runId}`;
  const phases: Phase[] = opts.redfish ? ['available', 'gone'] : [...PHASES];
  mkdirSync(BENCH_STATE_DIR, { recursive: true });
  const runDir = join(BENCH_STATE_DIR, 'runs', runId);
  mkdirSync(runDir, { recursive: true });
  log(`run ${runId}: ${opts.hosts} hosts, concurrency ${opts.concurrency}${opts.redfish ? ', redfish' : ''}${opts.agent ? ', agent path' : ''}${opts.sites > 1 ? `, ${opts.sites} sites` : ''}; logs in ${runDir}`);

  // ---------------------------------------------------------- the stack ----
  const tprofile = temporalProfile(opts.temporal);
  const temporalAddress = tprofile.address;
  const runStack = new RunStack(tprofile, opts.keepStack, log);
  const stackEnv: Record<string, string> = {};
  let systems: { id: string; mac: string }[] | undefined;
  if (opts.redfish) {
    const gen = redfishSystems(opts.hosts);
    systems = gen.systems;
    Object.assign(stackEnv, { SUSHY_SYSTEMS_FILE: gen.file, SUSHY_POWER_DELAY: '0-0.5' });
  }
  // The agent path's launcher and fake agent are up before sushy, which tells the launcher of every change.
  let agent: AgentPeers | undefined;
  if (opts.agent) {
    agent = await startAgentPeers({ hosts: opts.hosts, runDir, runStack, log });
    systems = agent.systems;
    Object.assign(stackEnv, agent.env);
  }
  // sushy only for Redfish hosts: fake-hardware nodes never reach a BMC (its start is some 10 s).
  try {
    runStack.start(opts.redfish || opts.agent ? ['ironic', 'sushy'] : ['ironic'], stackEnv, JSON.stringify(BENCH_PORTS));
  } catch (err) {
    await agent?.stop();
    throw err;
  }

  const secretDir = join(runDir, 'secrets');
  const proxy = new IronicProxy(IRONIC_URL);
  // --sites N: an Ironic and a proxy per site (bench/sites.ts); the bench stack's Ironic stays the default site's.
  const sites = opts.sites > 1 ? new BenchSites(siteNames(opts.sites), runDir, log) : undefined;
  try {
    await sites?.start(runStack);
    agent?.restartStale(runStack, stack);
    if (opts.redfish && (await sushySystemCount()) !== opts.hosts) {
      // Other systems than ours: restart sushy on a file with one system per host.
      log(`restarting sushy with ${opts.hosts} fake systems`);
      runStack.markStarted('sushy');
      stack(['restart', 'sushy'], stackEnv);
    }
    await removeLeftoverNodes(IRONIC_URL, log);
    await proxy.start();
    const hosts = assignSites(
      makeHosts(opts.hosts, { redfishSystems: systems, sushyUrl: SUSHY_URL, bmcScheme: opts.agent ? 'redfish-virtualmedia' : 'redfish' }),
      sites?.sites.map((x) => x.name) ?? [],
    );
    // On the agent path a phase holds up to two agent boots (cleaning, then the deploy), each of which Ironic waits
    // for up to its 600 s call-back timeout; a host whose step-end heartbeat Ironic skipped on a locked node waits
    // 90-180 s for the next. At 100 hosts on a loaded machine (load 37) a provision phase ran past 600 s with every
    // host still moving: the bench must not give up before Ironic would.
    const phaseTimeoutMs = Math.max(opts.agent ? AGENT_PHASE_TIMEOUT_MS : 600_000, opts.hosts * 3_000);

    // ------------------------------------------------------- metalflow ----
    // --driver floor: none (the floor half of a comparison made of several runs).
    const agentCtx = agent ? { image: agent.image, cpuSeconds: agent.cpuSeconds } : undefined;
    // The launcher's boots of each lifecycle: from its event counts before and after.
    const bootsSince = (before: LauncherEventCounts | undefined): LauncherEventCounts | undefined => {
      const now = agent?.events();
      return now && before ? { started: now.started - before.started, stopped: now.stopped - before.stopped, failed: now.failed - before.failed } : undefined;
    };
    const boots0 = agent?.events();
    const mf =
      opts.driver === 'floor'
        ? undefined
        : await runMetalflow({ opts, phases, hosts, runId, runDir, secretDir, namespace, fleetNamespace, proxy, tprofile, runStack, phaseTimeoutMs, log, agent: agentCtx, sites });
    const mfBoots = mf ? bootsSince(boots0) : undefined;
    const boots1 = agent?.events();

    // ----------------------------------------------------------- floor ----
    const floorOptions = {
      namespace: `floor-${runId}`,
      concurrency: opts.concurrency,
      pollMs: opts.floorPollMs,
      redfish: opts.redfish,
      agent: agentCtx,
    };
    // --sites: each site's Ironic driven directly (through its proxy), the same hosts at the same sites.
    const floorDriver = sites
      ? new SitesFloor(sites.sites.map((x) => ({ name: x.name, ironicUrl: x.proxy.url })), floorOptions)
      : new FloorDriver({ ...floorOptions, ironicUrl: proxy.url });
    // A floor that fails (Ironic saturated beyond what it retries) costs the run its comparison, not metalflow's figures.
    let floorError: string | undefined;
    const floorCtx = {
      phases,
      hosts,
      proxy,
      cpuNow: cpuReader(tprofile, undefined, undefined, agent?.cpuSeconds, sites ? () => sites.ironicCpu() : undefined),
      log,
      ...(sites ? { sites: sites.sites.map((x) => ({ name: x.name, hosts: hostsOfSite(hosts, x.name), proxy: x.proxy, ironicCpu: x.ironicCpu })) } : {}),
    };
    const floorReachedAt = floorDriver instanceof SitesFloor ? (p: Phase, host: string) => floorDriver.reachedAt(p, host) : undefined;
    const floor = opts.floor
      ? await measurePhases(floorCtx, 'floor', (p, hs) => floorDriver.runPhase(p, hs), undefined, undefined, floorReachedAt).catch(async (err: unknown) => {
          if (!mf) throw err;
          floorError = err instanceof Error ? err.message : String(err);
          log(`floor failed: ${floorError}; reporting metalflow without it`);
          await cleanup(temporalAddress, sites, `floor-${runId}`).catch((e: unknown) => log(`cleanup failed: ${String(e)}`));
          return undefined;
        })
      : undefined;
    const floorBoots = floor ? bootsSince(boots1) : undefined;
    if (floorDriver.transientResends > 0) log(`floor: ${floorDriver.transientResends} inspection(s) sent again after Ironic failed them for its own saturation`);
    if (floorDriver.retries > 0) log(`floor: ${floorDriver.retries} Ironic request(s) retried (5xx answers, reads not answered)`);
    if (floorDriver.rejectedReplans > 0) log(`floor: ${floorDriver.rejectedReplans} verb(s) refused because the node had moved on (an earlier request landed after all); re-planned from a fresh read`);

    // ---------------------------------------------------------- report ----
    const cpuModel = cpus()[0]?.model ?? 'unknown';
    const head = {
      version: 1 as const,
      date: new Date().toISOString(),
      commit,
      machine: { cpus: cpus().length, cpuModel, memGiB: Math.round(totalmem() / 2 ** 30), node: process.versions.node, os: `${process.platform} ${process.arch}` },
      options: {
        hosts: opts.hosts,
        concurrency: opts.concurrency,
        redfish: opts.redfish,
        agent: opts.agent,
        ...(agent ? { fakeAgent: { ...FAKE_AGENT_SETTINGS, stepTimes: { ...FAKE_AGENT_SETTINGS.stepTimes } }, agentIronic: agent.ironic } : {}),
        floorPollMs: opts.floorPollMs,
        idleSeconds: opts.idleSeconds,
        phases,
        floor: opts.floor,
        maxHistoryEvents: opts.maxHistoryEvents,
        temporal: opts.temporal,
        workers: opts.workers,
        fleet: opts.fleet,
        driver: opts.driver,
        ironicSyncPowerStateInterval: ironicSyncPowerStateInterval(),
        observer: 'visibility-list' as const,
        ...(opts.sites > 1 ? { sites: opts.sites } : {}),
        // The workers inherit the bench's environment: what they make of it.
        powerSentinelSeconds: loadConfig(process.env).powerSentinelSeconds,
        // glibc's MALLOC_ARENA_MAX moves the workers' RSS (docs/configuration.md, *Worker*).
        workerEnv: Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('METALFLOW_WORKER_') || k === 'MALLOC_ARENA_MAX') as [string, string][]),
      },
    };
    const write = (result: BenchResult | FloorOnlyResult): void => {
      const out = opts.out ?? join(REPO_ROOT, 'bench', 'results', resultFileName(result, runId));
      mkdirSync(join(out, '..'), { recursive: true });
      writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
      console.log(isFloorOnly(result) ? formatFloorOnly(result) : formatTable(result));
      console.log(`\nJSON: ${out}`);
    };
    if (!mf) {
      write({ ...head, floorOnly: true, floor: floor! });
      return;
    }
    const ratio: BenchResult['ratio'] = {};
    for (const p of phases) if (floor && floor.phaseMs[p] > 0) ratio[p] = mf.metalflow.phaseMs[p] / floor.phaseMs[p];
    const partial: Omit<BenchResult, 'targets'> = {
      ...head,
      temporalServer: mf.temporalServer,
      metalflow: mf.metalflow,
      fleet: mf.fleet,
      floor,
      ...(floorError ? { floorError } : {}),
      ...(mfBoots ? { agentBoots: { metalflow: mfBoots, ...(floorBoots ? { floor: floorBoots } : {}) } } : {}),
      ratio,
    };
    write({ ...partial, targets: evaluateTargets(partial) });
  } catch (err) {
    // Leave nothing behind that would load the next run: this run's host workflows and Ironic nodes.
    log('run failed; terminating its host workflows and deleting its Ironic nodes');
    await cleanup(temporalAddress, sites, namespace, fleetNamespace, `floor-${runId}`).catch((e: unknown) => log(`cleanup failed: ${String(e)}`));
    throw err;
  } finally {
    await proxy.stop().catch(() => undefined);
    await sites?.stopProxies();
    rmSync(secretDir, { recursive: true, force: true });
    await agent?.stop();
    runStack.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(1);
  },
);
