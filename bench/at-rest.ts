/**
 * What a fleet at rest costs: N fake-hardware hosts enrolled to `available`
 * through the API, then left alone for a few minutes while the run counts the
 * worker's Ironic requests (through the counting proxy) and samples the CPU of
 * the worker, Temporal and Ironic. The cost of noticing power drift and lost
 * nodes (docs/power.md): with the power sentinel, one list per interval; with
 * it off, each host's own check every METALFLOW_POWER_CHECK_SECONDS.
 *
 *   npm run bench:at-rest -- [--hosts 200] [--rest-seconds 180] [--concurrency 50]
 *                            [--sentinel-seconds 30] [--power-check-seconds 300] [--keep-stack]
 *
 * `--sentinel-seconds 0` turns the sentinel off (hosts check their own power every
 * `--power-check-seconds`). Runs on the bench stack (bench/procs.ts: its own ports and
 * state, Ironic's power sync at 120 s as Metal3's), removes its hosts at the end and
 * stops what it started unless --keep-stack. Prints one JSON line with the figures.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_OPTIONS } from '../workers/worker';
import { tokenHash } from '../api/auth/token-file';
import { IronicProxy } from './support/ironic-proxy';
import { cleanupNamespaces } from './cleanup';
import { makeHosts, sleep } from './common';
import { cpuDelta, requestKind } from './measure';
import { MetalflowDriver } from './metalflow';
import { cpuReader } from './metalflow-run';
import { API_URL, BENCH_PORTS, BENCH_STATE_DIR, gitCommit, IRONIC_URL, ironicSyncPowerStateInterval, ProcWatch, readProc, startNodeChild, waitUntil } from './procs';
import { RunStack } from './run-stack';
import { temporalProfile } from './temporal-profile';
import { WorkerWatch } from './worker-watch';

const log = (msg: string): void => console.error(`[at-rest ${new Date().toISOString().slice(11, 19)}] ${msg}`);

function whole(name: string, value: string | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name}: must be an integer >= ${min}, got ${JSON.stringify(value)}`);
  return n;
}

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    hosts: { type: 'string' },
    'rest-seconds': { type: 'string' },
    concurrency: { type: 'string' },
    'sentinel-seconds': { type: 'string' },
    'power-check-seconds': { type: 'string' },
    'keep-stack': { type: 'boolean', default: false },
  },
  strict: true,
});
const hostsWanted = whole('hosts', values.hosts, 200, 1);
const restSeconds = whole('rest-seconds', values['rest-seconds'], 180, 10);
const concurrency = whole('concurrency', values.concurrency, 50, 1);
const sentinelSeconds = whole('sentinel-seconds', values['sentinel-seconds'], 30, 0);
const powerCheckSeconds = whole('power-check-seconds', values['power-check-seconds'], 300, 0);

const runId = randomBytes(3).toString('hex');
const namespace = `rest-${runId}`;
const runDir = join(BENCH_STATE_DIR, 'runs', `at-rest-${runId}`);
mkdirSync(runDir, { recursive: true });
const tprofile = temporalProfile('dev');
const runStack = new RunStack(tprofile, values['keep-stack'], log);
runStack.start(['ironic'], {}, JSON.stringify(BENCH_PORTS));
const proxy = new IronicProxy(IRONIC_URL);
let driver: MetalflowDriver | undefined;
try {
  await proxy.start();
  log('bundling workflows');
  const bundlePath = join(BENCH_STATE_DIR, 'workflow-bundle.js');
  const { code } = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
  writeFileSync(bundlePath, code);
  const apiToken = randomBytes(24).toString('base64url');
  const tokensFile = join(runDir, 'api-tokens');
  writeFileSync(tokensFile, `${tokenHash(apiToken)} bench admin:*\n`, { mode: 0o600 });
  const env = {
    TEMPORAL_ADDRESS: tprofile.address,
    TEMPORAL_NAMESPACE: 'default',
    IRONIC_URL: proxy.url,
    METALFLOW_TASK_QUEUE: `at-rest-${runId}`,
    METALFLOW_WORKER_DEPLOYMENT: `at-rest-${runId}`,
    METALFLOW_STATE_DIR: runDir,
    METALFLOW_SECRET_DIR: join(runDir, 'secrets'),
    METALFLOW_SECRET_KEY: randomBytes(32).toString('base64'),
    METALFLOW_WORKFLOW_BUNDLE: bundlePath,
    METALFLOW_API_HOST: '127.0.0.1',
    METALFLOW_API_PORT: String(BENCH_PORTS.api),
    METALFLOW_API_TOKENS_FILE: tokensFile,
    METALFLOW_API_AUDIT_LOG: join(runDir, 'api-audit.log'),
    METALFLOW_PROVISIONING_LIMIT: '0',
    METALFLOW_POWER_SENTINEL_SECONDS: String(sentinelSeconds),
    METALFLOW_POWER_CHECK_SECONDS: String(powerCheckSeconds),
  };
  const worker = runStack.track(startNodeChild('worker', 'workers/main.ts', env, join(runDir, 'worker.log')));
  const api = runStack.track(startNodeChild('api', 'api/main.ts', env, join(runDir, 'api.log')));
  await waitUntil('the worker', () => worker.output.some((l) => l.includes('metalflow worker on task queue')), 120_000, worker);
  await waitUntil('the API', async () => (await request(`${API_URL}/healthz`)).statusCode === 200, 120_000, api);
  const watches = { worker: new WorkerWatch([new ProcWatch('worker', () => readProc(worker.pid)).start()]), api: new ProcWatch('api', () => readProc(api.pid)).start() };
  const cpuNow = cpuReader(tprofile, watches);

  driver = new MetalflowDriver({ apiUrl: API_URL, apiToken, temporalAddress: tprofile.address, namespace, concurrency, pollMs: hostsWanted > 300 ? 1000 : 250, redfish: false, phaseTimeoutMs: Math.max(600_000, hostsWanted * 3_000) });
  const hosts = makeHosts(hostsWanted);
  log(`enrolling ${hostsWanted} hosts (sentinel ${sentinelSeconds || 'off'}, power check ${powerCheckSeconds} s)`);
  const enrollStart = Date.now();
  await driver.runPhase('available', hosts);
  log(`all ${hostsWanted} available after ${((Date.now() - enrollStart) / 1000).toFixed(0)} s; at rest for ${restSeconds} s`);
  // The bench's own looks are not the fleet's cost: none while it rests.
  await driver.pauseLooks();
  // Let the enrolment's tail (status writes, first idle passes) pass before measuring.
  await sleep(30_000);
  const cpu0 = cpuNow();
  const from = proxy.requests.length;
  const t0 = Date.now();
  await sleep(restSeconds * 1000);
  const secs = (Date.now() - t0) / 1000;
  const cpu = cpuDelta(cpu0, cpuNow());
  const requests = proxy.requests.slice(from);
  const kinds: Record<string, number> = {};
  for (const r of requests) kinds[requestKind(r)] = (kinds[requestKind(r)] ?? 0) + 1;
  const perMinute = (n: number): number => Math.round((n / secs) * 60 * 10) / 10;
  const share = (cpuSeconds: number): number => Math.round((cpuSeconds / secs) * 1000) / 10;
  const figures = {
    date: new Date().toISOString(),
    commit: gitCommit(),
    hosts: hostsWanted,
    restSeconds: Math.round(secs),
    powerSentinelSeconds: sentinelSeconds,
    powerCheckSeconds,
    ironicSyncPowerStateInterval: ironicSyncPowerStateInterval(),
    ironicRequestsPerMinute: perMinute(requests.length),
    ironicRequestsPerMinuteByKind: Object.fromEntries(Object.entries(kinds).map(([k, n]) => [k, perMinute(n)])),
    cpuPercentOfACore: { worker: share(cpu.worker), temporal: share(cpu.temporal), ironic: share(cpu.ironic), api: share(cpu.api) },
  };
  driver.resumeLooks();
  await driver.stop();
  driver = undefined;
  console.log(JSON.stringify(figures));
  watches.worker.stop();
  watches.api.stop();
  log('removing the hosts');
  await cleanupNamespaces(tprofile.address, IRONIC_URL, [namespace], 'bench at-rest done');
  await worker.stop();
  await api.stop();
} finally {
  await driver?.stop().catch(() => undefined);
  await proxy.stop().catch(() => undefined);
  runStack.stop();
}
