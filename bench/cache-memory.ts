/**
 * `npm run bench:memory`: what one cached host workflow costs the worker.
 * Starts a worker process per variant on the bench stack's Temporal, starts N
 * host workflows without a spec (they wait, idle, in the worker's cache: the
 * same code and modules as a host at rest), and reads the worker's RSS before
 * and after. Variants: the worker as shipped (shared modules, its default
 * cache size), and with every host cached (METALFLOW_WORKER_MAX_CACHED_WORKFLOWS
 * above N) with the shared modules and without them (the SDK's default
 * bundle), which gives the memory of one cached host.
 *
 *   npm run bench:memory -- [--workflows 1000]
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import { connectTemporalClient } from '../clients/temporal/connection';
import { RECOMMENDED_MALLOC_ARENA_MAX } from '../config/env';
import { DEFAULT_MAX_CACHED_WORKFLOWS, WORKFLOW_BUNDLE_OPTIONS } from '../workers/worker';
import { hostViewQuery, type HostWorkflowInput } from '../contracts/host';
import { hostWorkflowId } from '../model/host-ref';
import { pool, sleep } from './common';
import { BENCH_STATE_DIR, IRONIC_URL, TEMPORAL_ADDRESS, readProc, stack, stackRunning, startNodeChild, waitUntil, type StackService } from './procs';

const log = (msg: string): void => console.error(`[memory ${new Date().toISOString().slice(11, 19)}] ${msg}`);

interface Variant {
  name: string;
  preload: boolean;
  cache?: number;
}

/** RSS once it stops falling (V8 returns pages lazily after a burst). */
async function settledRss(pid: number): Promise<number> {
  let last = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 20; i++) {
    await sleep(1000);
    const now = readProc(pid)?.rssMiB ?? 0;
    if (Math.abs(now - last) < 2) return now;
    last = now;
  }
  return last;
}

async function measure(client: Client, v: Variant, bundlePath: string, workflows: number): Promise<{ base: number; loaded: number; perWorkflowKiB: number }> {
  const runId = randomBytes(3).toString('hex');
  const taskQueue = `memory-${runId}`;
  const stateDir = join(BENCH_STATE_DIR, 'runs', `memory-${runId}`);
  mkdirSync(stateDir, { recursive: true });
  const worker = startNodeChild(
    'worker',
    'workers/main.ts',
    {
      TEMPORAL_ADDRESS,
      IRONIC_URL,
      METALFLOW_TASK_QUEUE: taskQueue,
      // A Worker Deployment per run: its worker's version becomes current at start, as on a first install.
      METALFLOW_WORKER_DEPLOYMENT: taskQueue,
      METALFLOW_STATE_DIR: stateDir,
      METALFLOW_WORKFLOW_BUNDLE: bundlePath,
      METALFLOW_IMAGE_FETCH_ALLOW: '127.0.0.0/8',
      ...(v.cache !== undefined ? { METALFLOW_WORKER_MAX_CACHED_WORKFLOWS: String(v.cache) } : {}),
    },
    join(stateDir, 'worker.log'),
  );
  try {
    await waitUntil('the worker', () => worker.output.some((l) => l.includes('metalflow worker on task queue')), 120_000, worker);
    const base = await settledRss(worker.pid);
    const refs = Array.from({ length: workflows }, (_, i) => ({ namespace: `memory-${runId}`, name: `h-${i}` }));
    await pool(refs, 50, async (ref) => {
      const input: HostWorkflowInput = { ref };
      const handle = await client.workflow.start('hostWorkflow', { taskQueue, workflowId: hostWorkflowId(ref), args: [input] });
      // A query needs the workflow in the worker: it has run its first task.
      await handle.query(hostViewQuery);
    });
    const loaded = await settledRss(worker.pid);
    for (const ref of refs) await client.workflow.getHandle(hostWorkflowId(ref)).terminate('memory probe done').catch(() => undefined);
    return { base, loaded, perWorkflowKiB: ((loaded - base) * 1024) / workflows };
  } finally {
    await worker.stop();
  }
}

async function main(): Promise<void> {
  // The workers as shipped (their launchers set it; glibc reads it at a process's start). MALLOC_ARENA_MAX=8 (or
  // any) in the environment measures another setting.
  process.env.MALLOC_ARENA_MAX ??= RECOMMENDED_MALLOC_ARENA_MAX;
  const { values } = parseArgs({ options: { workflows: { type: 'string', default: '1000' } } });
  const workflows = Number(values.workflows);
  if (!Number.isInteger(workflows) || workflows < 1) throw new Error(`--workflows must be a positive integer, got "${values.workflows}"`);
  mkdirSync(BENCH_STATE_DIR, { recursive: true });
  // The worker checks Ironic's API version at start, so Ironic runs too.
  const running = stackRunning();
  const started = (['temporal', 'ironic'] as StackService[]).filter((s) => !running.has(s));
  if (started.length > 0) stack(['start', ...started]);
  const connection = await connectTemporalClient({ address: TEMPORAL_ADDRESS });
  try {
    const client = new Client({ connection });
    const bundles: Record<'preload' | 'plain', string> = { preload: '', plain: '' };
    for (const kind of ['preload', 'plain'] as const) {
      const opts = kind === 'preload' ? WORKFLOW_BUNDLE_OPTIONS : { ...WORKFLOW_BUNDLE_OPTIONS, preloadModules: [] };
      const { code } = await bundleWorkflowCode({ ...opts, logger: new DefaultLogger('WARN') });
      bundles[kind] = join(BENCH_STATE_DIR, `workflow-bundle-${kind}.js`);
      writeFileSync(bundles[kind], code);
    }
    const all = workflows + 10;
    const variants: Variant[] = [
      { name: `as shipped (cache ${DEFAULT_MAX_CACHED_WORKFLOWS})`, preload: true },
      { name: 'every host cached, shared modules', preload: true, cache: all },
      { name: 'every host cached, SDK default bundle', preload: false, cache: all },
    ];
    console.log(`worker RSS with ${workflows} idle host workflows (machine: this one; Temporal ${TEMPORAL_ADDRESS}; MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX})`);
    for (const v of variants) {
      log(v.name);
      const r = await measure(client, v, v.preload ? bundles.preload : bundles.plain, workflows);
      console.log(
        `  ${v.name.padEnd(44)} idle worker ${r.base.toFixed(0).padStart(4)} MiB, with ${workflows} hosts ${r.loaded.toFixed(0).padStart(4)} MiB: ` +
          `${r.perWorkflowKiB.toFixed(0)} KiB per host` +
          (v.cache === undefined && workflows > DEFAULT_MAX_CACHED_WORKFLOWS ? ` (over all ${workflows}; ${DEFAULT_MAX_CACHED_WORKFLOWS} stay cached)` : ''),
      );
    }
  } finally {
    await connection.close();
    if (started.length > 0) stack(['stop', ...started]);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(1);
  },
);
