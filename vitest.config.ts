import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { HEAVY_ONLY_FILES } from './test/support/heavy';

const HEAVY = process.env.METALFLOW_TEST_HEAVY === '1';

/**
 * The chaos round kills and restarts processes of a stack of its own for minutes and loads both cores:
 * `npm run test:heavy` and `npm run chaos` run it (METALFLOW_CHAOS_ROUND=1 adds it to any run). `make test`
 * keeps the crash windows such rounds found as deterministic tests (test/e2e/*crash*).
 */
const CHAOS = 'test/chaos/chaos.test.ts';
const CHAOS_ROUND = HEAVY || process.env.METALFLOW_CHAOS_ROUND === '1';
/**
 * The fleet rounds at full size (100-200 hosts on the shared Ironic) run alone, after every other file: beside
 * them the others' waits starved (CI saw 60 s waits for a single host expire while 200 hosts enrolled). Their
 * small rounds in `make test` (12-20 hosts) run with the rest.
 */
const FLEET_AT_SIZE = ['test/k8s/fleet.test.ts', 'test/e2e/fleet-worker-crash.test.ts', 'test/integration/fleet-scale.test.ts'];
/** Two Temporal servers and a PostgreSQL of its own, one of them SIGKILLed: alone too, its waits are for failure detection. */
const MULTINODE = 'test/integration/temporal-multinode.test.ts';
const ALONE = [...(HEAVY ? [...FLEET_AT_SIZE, MULTINODE] : []), ...(CHAOS_ROUND ? [CHAOS] : [])];

/**
 * Files only `npm run test:heavy` runs (METALFLOW_TEST_HEAVY=1, test/support/heavy.ts). The heavy tier also
 * runs the chaos and fleet files and the pivot chaos round at full size; `make test` runs their small rounds. Each file here
 * is a second path through something `make test` already drives against the same peer, or a measurement
 * (docs/testing.md, "What runs in which tier").
 */
const HEAVY_ONLY = HEAVY ? [] : HEAVY_ONLY_FILES;

/**
 * Files run at once in the suite (and the stack-free tiers beside it: vitest wants one count per group). The
 * suite waits more than it computes (timers, polls, peers' own periods): on 2 cores two files at a time kept the
 * machine under one core on average, three at 1.6-1.7 cores, with minutes under 1.4; four fill those
 * (docs/testing.md, "Where the time goes").
 */
const WORKERS = Number(process.env.METALFLOW_TEST_WORKERS ?? 4);

/** The stack-free tier: no stack, no worker, no process of its own. */
const UNIT = 'test/unit/**/*.test.ts';
/** Stack-free too, but each with a Temporal test server and worker of its own: a process of its own. */
const TIME_SKIPPING = 'test/unit/**/*time-skipping.test.ts';

/** What both groups share. Not `extends: true`: a project inheriting globalSetup would start the stack and bundle the workflows again. */
const common: TestProjectInlineConfiguration['test'] = {
  setupFiles: ['test/support/quiet-runtime.ts'],
  // Each file runs in its own process with its own worker and task queue.
  pool: 'forks',
  testTimeout: 120_000,
  hookTimeout: 180_000,
  // Two retries: a test that fails and then passes is still named, as flaky with its first error, above CI's last
  // line (test/support/flaky-reporter.ts, scripts/test-summary.mjs); a test that fails three times fails the run.
  // Two, not one, while tests that time their waits for an idle machine fail twice under the whole run's load
  // and pass alone (docs/testing.md).
  retry: 2,
  // A cancellation reaches an activity with its next heartbeat: stopping a deploy under way takes ~1 s here instead of 15 s.
  env: { METALFLOW_HEARTBEAT_THROTTLE_SECONDS: '1' },
};

/** The stack files also hand their Ironic nodes back when they end (test/support/ironic-cleanup.ts). */
const STACK_SETUP = [...(common.setupFiles as string[]), 'test/support/ironic-cleanup.ts'];

/**
 * Runs the longest files first, so no long file starts last while the other
 * worker has nothing left to do. The length is the last run's (vitest's
 * cache) or, in a clean clone that has no cache (CI), the file's budget in
 * test/budgets.json (the slow files' measured times).
 */
/**
 * What a file without a budget or a cached run is taken to last: most stack files take 10-30 s, most stack-free
 * files under a second. Taken as 15 s too, the stack-free files fell behind every stack file in a clean clone and
 * ran after them: the long ones among them (budgeted, so they now start earlier) made the run's last 90 s alone.
 */
const UNKNOWN_SECONDS = 15;
const UNKNOWN_STACK_FREE_SECONDS = 1;

class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const budgets = (JSON.parse(readFileSync(join(root, 'test', 'budgets.json'), 'utf8')) as { files: Record<string, number> }).files;
    const seconds = (f: TestSpecification): number => {
      const path = relative(root, f.moduleId);
      const cached = this.ctx.cache.getFileTestResults(`${f.project.name}:${path}`);
      if (cached && cached.duration > 0) return cached.duration / 1000;
      return budgets[path] ?? (f.project.name === 'suite' || f.project.name === 'alone' ? UNKNOWN_SECONDS : UNKNOWN_STACK_FREE_SECONDS);
    };
    const sorted = await super.sort(files);
    const order = new Map(sorted.map((f, i) => [f, i]));
    return [...sorted].sort(
      (a, b) => a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || seconds(b) - seconds(a) || order.get(a)! - order.get(b)!,
    );
  }
}

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    sequence: { sequencer: SlowFirstSequencer },
    reporters: ['default', 'json', './test/support/flaky-reporter.ts', './test/support/timing-reporter.ts'],
    outputFile: { json: 'test-results/vitest.json' },
    projects: [
      {
        // Without isolation a fork runs file after file with the modules it already loaded (the SDK, the clients,
        // the harness): some 3 s of CPU a file less. Each file still has its own task queue, namespace and workers.
        test: { ...common, name: 'suite', setupFiles: STACK_SETUP, include: ['test/**/*.test.ts'], exclude: [UNIT, ...ALONE, CHAOS, ...HEAVY_ONLY], isolate: false, maxWorkers: WORKERS, sequence: { groupOrder: 0 } },
      },
      {
        // Pure tests (no stack, no worker) share their threads' module cache: 83 files in ~20 s instead of ~2 min of per-file process start-up and imports.
        test: { ...common, name: 'unit', include: [UNIT], exclude: [TIME_SKIPPING], pool: 'threads', isolate: false, maxWorkers: WORKERS, sequence: { groupOrder: 0 } },
      },
      {
        test: { ...common, name: 'time-skipping', include: [TIME_SKIPPING], maxWorkers: WORKERS, sequence: { groupOrder: 0 } },
      },
      {
        test: { ...common, name: 'alone', setupFiles: STACK_SETUP, include: ALONE, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
