/**
 * Are the host workflow's histories replayable when its worker is stalled and killed while updates arrive?
 * (docs/adr/0006-local-activity-heartbeat.md). Starts idle, available, Kubernetes-driven host workflows (the
 * real bundle; activities answered by test/support/replay-chaos-worker.ts) with a short workflow task
 * timeout, sends each the controller's traffic (a query then a pause or unpause update, the power
 * sentinel's signal), stops the worker with SIGSTOP for up to a few seconds (a loaded machine) and now and
 * then SIGKILLs it, then replays every run's history with Worker.runReplayHistory and prints each
 * nondeterminism error, the failing history written to .state/replay-chaos/.
 *
 * Needs the test stack's Temporal (scripts/stack.sh start temporal, with the worktree's .wtenv):
 *   npx tsx test/support/replay-chaos.ts
 * REPLAY_CHAOS_HOSTS (8), REPLAY_CHAOS_SECONDS (240), REPLAY_CHAOS_WFT (workflow task timeout, 2s),
 * REPLAY_CHAOS_STOP_MS (longest stop, 2500), REPLAY_CHAOS_KILL_P (share of the stops that are kills, 0.15),
 * REPLAY_CHAOS_READ_MS / REPLAY_CHAOS_PUBLISH_MS (the activities' longest delay).
 * REPLAY_CHAOS_QUERIES=off sends the traffic as the controller and the waiters send it since they stopped
 * querying hosts in flight: the pause update without a query first, a describe where a query read the host.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { REPO_ROOT } from '../../config/env';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import { hostViewQuery, powerChangedSignal, setPausedUpdate, type HostState } from '../../contracts/host';
import { hostWorkflowId } from '../../model/host-ref';
import { registrationFingerprint } from '../../workflows/host/decide';
import { TEMPORAL_ADDRESS } from './env';

const env = (name: string, fallback: number): number => Number(process.env[`REPLAY_CHAOS_${name}`] ?? fallback);
const HOSTS = env('HOSTS', 8);
const SECONDS = env('SECONDS', 240);
const STOP_MS = env('STOP_MS', 2500);
const KILL_P = env('KILL_P', 0.15);
const WFT = process.env.REPLAY_CHAOS_WFT ?? '2s';
const QUERIES = process.env.REPLAY_CHAOS_QUERIES !== 'off';
const OUT = join(REPO_ROOT, '.state', 'replay-chaos');

Runtime.install({ logger: new DefaultLogger('ERROR') });
mkdirSync(OUT, { recursive: true });
const taskQueue = `replay-chaos-${Date.now()}`;
const bundlePath = join(OUT, `${taskQueue}.js`);
const { code } = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
writeFileSync(bundlePath, code);
const client = new Client({ connection: await Connection.connect({ address: TEMPORAL_ADDRESS }) });

let worker!: ChildProcess;
const startWorker = (): void => {
  const script = fileURLToPath(new URL('./replay-chaos-worker.ts', import.meta.url));
  worker = spawn(process.execPath, ['--import', 'tsx', script, TEMPORAL_ADDRESS, taskQueue, bundlePath], { stdio: ['ignore', 'ignore', 'inherit'] });
};
startWorker();
// The worker goes with this script, however it ends.
process.on('exit', () => worker.kill('SIGKILL'));

/** An available host at rest whose status is written back to Kubernetes: what the pivot finds when it freezes one. */
function idleHost(i: number): HostState {
  const ref = { namespace: 'replay-chaos', name: `${taskQueue}-${i}` };
  const spec = { online: true, bootMACAddress: `52:54:00:00:01:${(16 + i).toString(16)}`, bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` } };
  return {
    ref,
    spec,
    generation: 1,
    deleteRequested: false,
    opSeq: 3,
    operations: [],
    registered: registrationFingerprint(spec),
    status: {
      operationalStatus: 'OK',
      errorType: '',
      errorMessage: '',
      errorCount: 0,
      poweredOn: true,
      lastUpdated: new Date().toISOString(),
      operationHistory: { register: {}, inspect: {}, provision: {}, deprovision: {} },
      provisioning: { state: 'available', ID: `node-${i}` },
    },
    options: { errorBackoffSeconds: 1, maxErrorBackoffSeconds: 2, publishStatus: true, powerCheckSeconds: 1, softPowerOffSeconds: 180, maxHistoryEvents: 1000 },
  } as HostState;
}

const ids: string[] = [];
for (let i = 0; i < HOSTS; i++) {
  const state = idleHost(i);
  const workflowId = hostWorkflowId(state.ref);
  await client.workflow.start('hostWorkflow', { workflowId, taskQueue, args: [{ ref: state.ref, state }], workflowTaskTimeout: WFT });
  ids.push(workflowId);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const end = Date.now() + SECONDS * 1000;
let stops = 0;
let kills = 0;
let queries = 0;
/** A read of the host: a query, or (QUERIES off) the describe a waiter now makes instead. */
const read = async (handle: ReturnType<typeof client.workflow.getHandle>): Promise<void> => {
  if (!QUERIES) return void (await handle.describe().catch(() => undefined));
  queries += 1;
  await handle.query(hostViewQuery).catch(() => undefined);
};
const traffic = ids.map(async (workflowId) => {
  const handle = client.workflow.getHandle(workflowId);
  let paused = false;
  while (Date.now() < end) {
    await sleep(Math.random() * 400);
    const r = Math.random();
    if (r < 0.45) {
      // As the controller did (k8s/controller/reconciler.ts syncPaused): a query first, then the update; now
      // the update alone (the controller keeps what it last sent).
      paused = !paused;
      if (QUERIES) await read(handle);
      // Without the query, awaited as the controller awaits it: else a stalled worker would meet a pile of updates.
      const sent = handle.executeUpdate(setPausedUpdate, { args: [paused ? { paused: true, reason: `replay-chaos-${Math.floor(Math.random() * 1e6)}` } : { paused: false }] }).catch(() => undefined);
      if (!QUERIES) await sent;
    } else if (r < 0.75) await read(handle);
    else await handle.signal(powerChangedSignal, { at: new Date().toISOString(), from: 'power on', to: 'power on' }).catch(() => undefined);
  }
});
const chaos = (async () => {
  while (Date.now() < end) {
    await sleep(1000 + Math.random() * 3000);
    if (Math.random() < KILL_P) {
      worker.kill('SIGKILL');
      kills += 1;
      await sleep(Math.random() * 2000);
      startWorker();
    } else {
      worker.kill('SIGSTOP');
      stops += 1;
      await sleep(500 + Math.random() * STOP_MS);
      worker.kill('SIGCONT');
    }
  }
})();
await Promise.all([...traffic, chaos]);
await sleep(5000);

let runs = 0;
let failed = 0;
for await (const w of client.workflow.list({ query: `TaskQueue = "${taskQueue}"` })) {
  const history = await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory();
  runs += 1;
  try {
    await Worker.runReplayHistory({ workflowBundle: { code }, replayName: `${w.workflowId}/${w.runId}` }, history);
  } catch (err) {
    failed += 1;
    const file = join(OUT, `${w.runId}.json`);
    writeFileSync(file, JSON.stringify(history));
    const nde = /Nondeterminism error: [^"]*/.exec(String((err as Error).message))?.[0] ?? String(err).slice(0, 300);
    console.log(`${w.workflowId} (${history.events?.length} events): ${nde}\n  history: ${file}`);
  }
}
console.log(`queries ${QUERIES ? queries : 'off'}, stops ${stops}, kills ${kills}; replayed ${runs} runs, ${failed} with a nondeterminism error`);
for (const id of ids) await client.workflow.getHandle(id).terminate('replay-chaos over').catch(() => undefined);
worker.kill('SIGKILL');
process.exit(0);
