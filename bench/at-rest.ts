/**
 * What a fleet at rest costs: N fake-hardware hosts enrolled to `available`,
 * then left alone for a few minutes while the run counts metalflow's Ironic
 * requests (through the counting proxy) and samples the CPU of the worker,
 * Temporal and Ironic. The cost of noticing power drift and lost nodes
 * (docs/power.md): with the power sentinel, one list per interval; with it
 * off, each host's own check every METALFLOW_POWER_CHECK_SECONDS.
 *
 *   npm run bench:at-rest -- [--driver api|k8s] [--hosts 200] [--rest-seconds 180] [--concurrency 50]
 *                            [--sentinel-seconds 30] [--power-check-seconds 300]
 *                            [--lose-ironic-db [--recovery-timeout-seconds S] [--floor-hosts N] [--floor-concurrency C]]
 *                            [--keep-stack]
 *
 * --driver api (the default) enrols the hosts through the HTTP API (worker
 * and API as child processes); --driver k8s as BareMetalHosts (a BMC Secret,
 * a user-data Secret and the object each) on a kube-apiserver and etcd of the
 * run's own, through the controller, as `npm run bench -- --driver k8s` does
 * (bench/k8s-driver.ts, bench/kube-stack.ts): the controller's, kube-apiserver's
 * and etcd's CPU are printed too, and the API server's requests at rest per
 * minute by kind, the status writes and Events among them.
 * `--sentinel-seconds 0` turns the sentinel off (hosts check their own power every
 * `--power-check-seconds`).
 * --lose-ironic-db: after the rest window, the bench stack's Ironic is restarted
 * on an empty database (every node in it is lost, not only the run's) and each
 * host timed from Ironic answering again until it is registered again (a new
 * node carrying its mark; with --driver k8s also its object's
 * status.provisioning.ID changed): max / p50 / p95 seconds, how many did
 * within 60 s and at all. The recovery window runs until every new node is
 * back in the provision state the old one rested in (at most
 * --recovery-timeout-seconds, by default max(300, 2 s per host)); its Ironic
 * requests per minute, CPU and, with --driver k8s, the API server's writes
 * are printed (bench/ironic-loss.ts), with per host the requests (by kind)
 * and Ironic's CPU seconds. Then the re-registration floor (bench/rereg-floor.ts):
 * --floor-hosts fake-hardware nodes (by default 20, at most the fleet's; 0: none)
 * registered anew straight against Ironic, --floor-concurrency at a time (4),
 * each with the fewest requests Ironic allows (node in one POST, port, manage;
 * then instance_info and adopt), timed and Ironic's CPU measured per phase, and
 * Ironic's CPU per host times the fleet's hosts printed beside the 60 s target:
 * how much of it is Ironic's own cost on this machine.
 *
 * Runs on the bench stack (bench/procs.ts: its own ports and state, Ironic's
 * power sync at 120 s as Metal3's), removes its hosts at the end (deletes the
 * BareMetalHosts with --driver k8s) and stops what it started unless
 * --keep-stack. Prints one JSON line with the figures.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { IronicProxy } from './support/ironic-proxy';
import { cpuPercentOfACore, kubeRates, perMinute, ratesPerMinute, requestsByKind } from './at-rest-figures';
import { parseAtRestOptions, type AtRestOptions } from './at-rest-options';
import { cleanupNamespaces } from './cleanup';
import { makeHosts, sleep } from './common';
import { loseIronicDb, type IronicLossFigures } from './ironic-loss';
import { floorBeside, floorSummary, reregistrationFloor, type FloorBeside, type ReregFloorFigures } from './rereg-floor';
import { K8sDriver } from './k8s-driver';
import { countsDelta } from './kube-stack';
import { cpuDelta } from './measure';
import { startMetalflow, type MetalflowProcs } from './metalflow-procs';
import { BENCH_PORTS, BENCH_STATE_DIR, gitCommit, IRONIC_URL, ironicSyncPowerStateInterval } from './procs';
import { RunStack } from './run-stack';
import { temporalProfile } from './temporal-profile';

const log = (msg: string): void => console.error(`[at-rest ${new Date().toISOString().slice(11, 19)}] ${msg}`);

async function main(opts: AtRestOptions): Promise<void> {
  // The code that runs is the checkout at the start: a commit made while a long run goes on must not be its label.
  const commit = gitCommit();
  const runId = randomBytes(3).toString('hex');
  const namespace = `rest-${runId}`;
  const runDir = join(BENCH_STATE_DIR, 'runs', `at-rest-${runId}`);
  const secretDir = join(runDir, 'secrets');
  mkdirSync(runDir, { recursive: true });
  const tprofile = temporalProfile('dev');
  const runStack = new RunStack(tprofile, opts.keepStack, log);
  runStack.start(['ironic'], {}, JSON.stringify(BENCH_PORTS));
  const proxy = new IronicProxy(IRONIC_URL);
  let procs: MetalflowProcs | undefined;
  let removed = false;
  try {
    await proxy.start();
    const phaseTimeoutMs = Math.max(600_000, opts.hosts * 3_000);
    procs = await startMetalflow({
      driver: opts.driver,
      runId,
      runDir,
      secretDir,
      namespace,
      taskQueue: `at-rest-${runId}`,
      proxy,
      tprofile,
      runStack,
      hosts: opts.hosts,
      concurrency: opts.concurrency,
      redfish: false,
      phaseTimeoutMs,
      keepStack: opts.keepStack,
      log,
      env: { METALFLOW_POWER_SENTINEL_SECONDS: String(opts.sentinelSeconds), METALFLOW_POWER_CHECK_SECONDS: String(opts.powerCheckSeconds) },
    });
    const { driver, cpuNow } = procs;
    const hosts = makeHosts(opts.hosts);
    log(`enrolling ${opts.hosts} hosts ${opts.driver === 'k8s' ? 'as BareMetalHosts' : 'through the API'} (sentinel ${opts.sentinelSeconds || 'off'}, power check ${opts.powerCheckSeconds} s)`);
    const enrollStart = Date.now();
    await driver.runPhase('available', hosts);
    log(`all ${opts.hosts} available after ${((Date.now() - enrollStart) / 1000).toFixed(0)} s; at rest for ${opts.restSeconds} s`);
    // The bench's own looks are not the fleet's cost: none while it rests.
    await driver.pauseLooks();
    // Let the enrolment's tail (status writes, first idle passes) pass before measuring.
    await sleep(30_000);
    const cpu0 = cpuNow();
    const from = proxy.requests.length;
    const kube0 = await procs.kube?.requestCounts();
    const t0 = Date.now();
    await sleep(opts.restSeconds * 1000);
    const seconds = (Date.now() - t0) / 1000;
    const cpu = cpuDelta(cpu0, cpuNow());
    const kube = procs.kube && kube0 ? kubeRates(countsDelta(kube0, await procs.kube.requestCounts()), seconds) : undefined;
    const requests = proxy.requests.slice(from);
    let ironicLoss: IronicLossFigures | undefined;
    let floorFigures: (ReregFloorFigures & FloorBeside) | undefined;
    if (opts.loseIronicDb) {
      ironicLoss = await loseIronicDb({
        namespace,
        names: hosts.map((h) => h.name),
        proxy,
        timeoutSeconds: opts.recoveryTimeoutSeconds,
        cpuNow,
        log,
        ...(driver instanceof K8sDriver ? { k8s: driver, kube: procs.kube } : {}),
      });
      if (opts.floorHosts > 0) {
        log(`the re-registration floor: ${opts.floorHosts} nodes registered anew and adopted straight against Ironic, ${opts.floorConcurrency} at a time`);
        const floor = await reregistrationFloor({ ironicUrl: IRONIC_URL, hosts: opts.floorHosts, concurrency: opts.floorConcurrency, pollMs: 250, cpuNow });
        floorFigures = { ...floor, ...floorBeside(floor, ironicLoss, opts.hosts) };
        log(floorSummary(floorFigures, ironicLoss, opts.hosts));
      }
    }
    driver.resumeLooks();
    const figures = {
      date: new Date().toISOString(),
      commit,
      driver: opts.driver,
      hosts: opts.hosts,
      restSeconds: Math.round(seconds),
      powerSentinelSeconds: opts.sentinelSeconds,
      powerCheckSeconds: opts.powerCheckSeconds,
      ironicSyncPowerStateInterval: ironicSyncPowerStateInterval(),
      ironicRequestsPerMinute: perMinute(requests.length, seconds),
      ironicRequestsPerMinuteByKind: ratesPerMinute(requestsByKind(requests), seconds),
      cpuPercentOfACore: cpuPercentOfACore(cpu, seconds),
      ...(kube ? { kubeApiServer: kube } : {}),
      ...(ironicLoss ? { ironicLoss } : {}),
      ...(floorFigures ? { reregistrationFloor: floorFigures } : {}),
    };
    console.log(JSON.stringify(figures));
    log('removing the hosts');
    if (driver instanceof K8sDriver) {
      // Deleted as a user deletes them: the objects go once their workflows have removed the nodes.
      await driver.runPhase('gone', hosts);
      await procs.kube?.clear(namespace);
    } else {
      await cleanupNamespaces(tprofile.address, IRONIC_URL, [namespace], 'bench at-rest done');
    }
    removed = true;
  } finally {
    if (!removed) {
      log('run failed; terminating its host workflows and deleting its Ironic nodes');
      await cleanupNamespaces(tprofile.address, IRONIC_URL, [namespace], 'bench at-rest failed').catch((e: unknown) => log(`cleanup failed: ${String(e)}`));
    }
    await procs?.stop();
    await proxy.stop().catch(() => undefined);
    rmSync(secretDir, { recursive: true, force: true });
    runStack.stop();
  }
}

let opts: AtRestOptions;
try {
  opts = parseAtRestOptions(process.argv.slice(2), new URL(import.meta.url));
} catch (err) {
  // A wrong argument: its message (which option, what is wrong, what is accepted) and no stack.
  console.error(`bench:at-rest: ${(err as Error).message}`);
  process.exit(2);
}
main(opts).then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(1);
  },
);
