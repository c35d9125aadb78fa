/**
 * One chaos run, start to end: the stack and processes up, every host through
 * its lifecycle while the faults fire, then the checks, the table and the
 * JSON result; and whatever the run left removed. `runChaos` is what
 * `npm run chaos` and the test call.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, type Connection } from '@temporalio/client';
import { connectTemporalClient } from '../../clients/temporal/connection';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { metalflowDataConverter } from '../../clients/temporal/payload-keys';
import { REPO_ROOT } from '../../config/env';
import { IronicProxy } from '../support/ironic-proxy';
import { serveFiles, tinyIso, type FileServer } from '../support/bmc-files';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import { ApiClient } from '../api-client';
import { cleanupNamespaces } from '../cleanup';
import { gitCommit } from '../procs';
import { passed, runChecks } from './checks';
import { ApiModeDriver, KubeModeDriver, type ModeDriver } from './drivers';
import { Blackhole, FaultRunner, ironicFaults, planFaults } from './faults';
import { Fleet } from './fleet';
import { malformedInputs } from './malformed';
import { makeChaosHosts, plantedSecrets, type ChaosHost, type HostMode } from './hosts';
import { IronicWatch } from './ironic-watch';
import type { ChaosOptions } from './options';
import { Random } from './random';
import { formatTable, machine, stepSeconds, type ChaosResult } from './report';
import { ChaosStack, type RunNames } from './stack';
import type { Crash, Supervised } from './supervisor';

/** Who a planted secret belongs to, for reports that must not print it. */
function secretOwners(hosts: ChaosHost[], extra: Record<string, string>): (secret: string) => string {
  const owners = new Map<string, string>(Object.entries(extra));
  for (const h of hosts) {
    if (h.kind === 'fake') owners.set(h.password, `the BMC password of ${h.key}`);
    for (const s of [h.userData, h.networkData]) {
      const marker = /chaos-(user|network)-data-[0-9a-f]+/.exec(s ?? '');
      if (marker) owners.set(marker[0], `the ${marker[1]} data of ${h.key}`);
    }
  }
  return (secret) => owners.get(secret) ?? 'a planted secret';
}

export async function runChaos(opts: ChaosOptions): Promise<ChaosResult> {
  const { log } = opts;
  const rng = new Random(opts.seed);
  const runId = randomBytes(3).toString('hex');
  const names: RunNames = {
    runId,
    runDir: join(opts.stateDir, 'runs', runId),
    namespaces: { api: `chaos-${runId}-api`, k8s: `chaos-${runId}-k8s` },
    taskQueues: { api: `chaos-${runId}-api`, k8s: `chaos-${runId}-k8s` },
  };
  mkdirSync(names.runDir, { recursive: true });
  const corpusNamespace = `chaos-${runId}-corpus`;
  const modes: HostMode[] = opts.mode === 'both' ? ['api', 'k8s'] : [opts.mode];
  log(`seed ${opts.seed}, run ${runId}: ${opts.hosts} hosts (${opts.mode}), faults ${opts.faults.join(', ') || 'none'}; logs in ${names.runDir}`);

  const stack = new ChaosStack(opts, names);
  const crashes: Crash[] = [];
  const proxy = new IronicProxy(stack.ironicUrl);
  const bmcProxies = Array.from({ length: opts.bmcHosts }, () => new IronicProxy(stack.sushyUrl));
  let iso: FileServer | undefined;
  let processes: Partial<Record<string, Supervised>> = {};
  let connection: Connection | undefined;
  let watch: IronicWatch | undefined;
  const drivers: Partial<Record<HostMode, ModeDriver>> = {};
  const api = new ApiClient(stack.apiUrl, stack.apiToken, opts.hosts + 8);
  const started = Date.now();
  try {
    await stack.start(modes.includes('k8s'));
    await proxy.start();
    for (const p of bmcProxies) await p.start();
    if (opts.bmcHosts > 0) iso = await serveFiles({ 'live.iso': tinyIso() });
    const hosts = makeChaosHosts(opts, rng.fork('hosts'), {
      namespaces: names.namespaces,
      bmcAddress: (i) => `redfish-virtualmedia+${bmcProxies[i]!.url}/redfish/v1/Systems/${stack.systems[i]!.id}`,
      sushyPassword: stack.sushyPassword,
      isoUrl: iso?.url('live.iso') ?? '',
    });

    let bundle = opts.workflowBundle;
    if (!bundle) {
      log('bundling workflows');
      bundle = join(names.runDir, 'workflow-bundle.js');
      writeFileSync(bundle, (await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') })).code);
    }
    if (modes.includes('k8s')) {
      const kube = await KubeModeDriver.create(stack.kubeconfig!, names.namespaces.k8s);
      await kube.prepare();
      drivers.k8s = kube;
    }
    if (modes.includes('api')) drivers.api = new ApiModeDriver(api, names.namespaces.api);
    processes = stack.processes(modes, proxy.url, bundle, crashes);
    for (const p of Object.values(processes)) p!.start();
    for (const p of Object.values(processes)) await p!.waitReady();
    log(`processes up: ${Object.keys(processes).join(', ')}; Ironic through the fault proxy ${proxy.url}`);

    if (opts.faults.includes('ironic-proxy') && opts.proxyShare > 0) proxy.interceptor = ironicFaults(opts.proxyShare, opts.noAnswerMs, rng.fork('proxy'));
    const blackholes = bmcProxies.map((p) => new Blackhole(p));
    watch = new IronicWatch(stack.ironicUrl, Object.values(names.namespaces));
    watch.start();
    connection = await connectTemporalClient({ address: stack.temporalAddress });
    const temporal = new Client({ connection });
    const fleet = new Fleet(hosts, drivers, temporal, `host/chaos-${runId}-`, {
      stepTimeoutMs: opts.stepTimeoutSeconds * 1000,
      tickMs: opts.hosts > 20 ? 2000 : 1000,
      log,
    });
    const plan = planFaults(opts, rng.fork('plan'));
    log(`fault plan: ${plan.map((f) => `${f.kind}@${f.at.toFixed(2)}`).join(', ') || 'none'}`);
    const faults = new FaultRunner(plan, { processes, stack: stack.services, blackholes, ironic: watch, progress: (kind) => (kind === 'bmc' ? fleet.directProgress : fleet.progress), busyBmcs: () => fleet.busyBmcs(), listedStates: () => fleet.listedStates(), rng: rng.fork('bmc'), log });
    const injecting = faults.run();
    await fleet.run();
    faults.finish();
    await injecting;
    proxy.interceptor = undefined;
    const endedAt = Date.now();
    log('every host done, stuck or lost; checking');

    let malformed: ChaosResult['malformedInputs'];
    if (processes.api && opts.malformedCorpus) {
      log('sending the malformed-input corpus to the API');
      malformed = await malformedInputs({
        api: processes.api,
        apiUrl: stack.apiUrl,
        token: stack.apiToken,
        namespace: corpusNamespace,
        secretDir: join(names.runDir, 'secrets'),
        secretKey: stack.secretKey,
        temporal,
        seed: opts.seed,
      }).catch((err: unknown) => ({ sent: 0, rejectedWithFieldError: 0, changedAnything: 0, failures: [{ name: 'the corpus run', problem: String(err) }] }));
    }

    const nodesLeft = await watch.read();
    await watch.stop();
    const records = fleet.records;
    const leftNodes = [...new Set(nodesLeft.map((n) => n.host))].filter((key) => records.get(key)?.outcome === 'done');
    const secrets = [...plantedSecrets(hosts), stack.apiToken];
    const codecs = metalflowDataConverter(join(names.runDir, 'payload.keys'))?.payloadCodecs ?? [];
    const workflowIds: string[] = [];
    for await (const wf of temporal.workflow.list({ query: `WorkflowId STARTS_WITH "host/chaos-${runId}-"` })) workflowIds.push(wf.workflowId);
    const checks = await runChecks({
      hosts,
      records,
      ironicRequests: proxy.requests,
      bmcRequests: bmcProxies.map((p) => p.requests),
      ironic: watch,
      endedAt,
      workflowIds,
      resent: drivers.api instanceof ApiModeDriver ? drivers.api.resent : new Map(),
      wipes: faults.wipes,
      temporal,
      codecs,
      secrets,
      owner: secretOwners(hosts, { [stack.apiToken]: "the API's bearer token", [stack.sushyPassword]: "the BMCs' (sushy's) password" }),
      logs: stack.logFiles(Object.values(processes).map((p) => p!.spec.logFile).concat(join(names.runDir, 'api-audit.log'))),
      leftNodes,
    });
    const injected: ChaosResult['ironicProxy']['injected'] = {};
    for (const r of proxy.requests) if (r.injected) injected[r.injected] = (injected[r.injected] ?? 0) + 1;
    const bmcRequests = bmcProxies.flatMap((p) => p.requests);
    const result: ChaosResult = {
      version: 1,
      kind: 'chaos',
      date: new Date().toISOString(),
      commit: gitCommit(),
      seed: opts.seed,
      machine: machine(),
      options: Object.fromEntries(Object.entries(opts).filter(([k]) => k !== 'log')) as ChaosResult['options'],
      durationMs: endedAt - started,
      hosts: {
        total: hosts.length,
        api: hosts.filter((h) => h.mode === 'api').length,
        k8s: hosts.filter((h) => h.mode === 'k8s').length,
        direct: hosts.filter((h) => h.kind === 'direct').length,
      },
      faults: faults.records,
      ironicProxy: { requests: proxy.requests.length, injected },
      bmcProxies: { requests: bmcRequests.length, unanswered: bmcRequests.filter((r) => r.injected).length },
      apiRetries: drivers.api instanceof ApiModeDriver ? drivers.api.retries : 0,
      crashes,
      ...(malformed ? { malformedInputs: malformed } : {}),
      checks,
      passed:
        passed(checks) &&
        faults.records.every((f) => f.startedAt !== undefined && !f.error) &&
        (!malformed || (malformed.failures.length === 0 && malformed.changedAnything === 0 && malformed.rejectedWithFieldError === malformed.sent)),
      stepSeconds: stepSeconds([...records.values()]),
      hostRecords: [...records.values()],
    };
    const out = opts.out ?? join(REPO_ROOT, 'bench', 'results', `chaos-${result.date.slice(0, 10)}-${result.commit}-${opts.seed}.json`);
    mkdirSync(join(out, '..'), { recursive: true });
    writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
    console.log(formatTable(result));
    console.log(`\nJSON: ${out}`);
    return result;
  } finally {
    proxy.interceptor = undefined;
    await watch?.stop();
    for (const p of Object.values(processes)) await p?.stop().catch(() => undefined);
    if (!opts.keepStack) {
      // A stuck host's workflow and node would load the next run.
      await cleanupNamespaces(stack.temporalAddress, stack.ironicUrl, [...Object.values(names.namespaces), corpusNamespace], 'chaos run over').catch((e: unknown) => log(`cleanup: ${String(e)}`));
      if (drivers.k8s instanceof KubeModeDriver) await drivers.k8s.clear().catch((e: unknown) => log(`cleanup: ${String(e)}`));
    }
    await connection?.close().catch(() => undefined);
    await api.close();
    await proxy.stop();
    for (const p of bmcProxies) await p.stop();
    await iso?.close();
    await stack.stop();
  }
}
