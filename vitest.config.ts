import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';

/**
 * Files that load the one shared Ironic (or both cores) for minutes. They run
 * alone, after every other file: beside them, the others' waits starve (CI
 * saw 60 s waits for a single host expire while 200 hosts enrolled). The chaos
 * round kills and restarts processes of its own stack for minutes.
 */
const CHAOS = 'test/chaos/chaos.test.ts';
/** Holds a write lock on the shared Ironic's database for 20 s: beside it, other files' Ironic writes would fail. */
const LOCKS_IRONIC = 'test/integration/inspection-ironic-busy.test.ts';
/**
 * A small chaos round runs in `make test` (alone, last): crash windows only a round of kills finds, such as a
 * reboot sent twice when the API dies between starting it and answering. METALFLOW_CHAOS_ROUND=0 leaves it out
 * of a local run.
 */
/** 100 hosts enrolled on the shared Ironic, then a fleet reboot across a worker SIGKILL. */
const FLEET_CRASH = 'test/e2e/fleet-worker-crash.test.ts';
/** 200 hosts provisioned by one fleet operation. */
const FLEET_SCALE = 'test/integration/fleet-scale.test.ts';
/** Stops and restarts the shared test API server: beside it, other Kubernetes files' calls were refused. */
const STOPS_KUBE = 'test/k8s/apiserver-outage.test.ts';
const ALONE = ['test/k8s/fleet.test.ts', STOPS_KUBE, FLEET_CRASH, FLEET_SCALE, LOCKS_IRONIC, ...(process.env.METALFLOW_CHAOS_ROUND === '0' ? [] : [CHAOS])];

/**
 * Files only `npm run test:heavy` runs (METALFLOW_TEST_HEAVY=1, test/support/heavy.ts). The heavy tier also
 * runs the chaos, fleet and pivot-chaos files at full size; `make test` runs their small rounds.
 */
const HEAVY_ONLY = process.env.METALFLOW_TEST_HEAVY === '1' ? [] : ['test/bench/bench-tools.test.ts'];

/** The stack-free tier: no stack, no worker, no process of its own. */
const UNIT = 'test/unit/**/*.test.ts';

/** What both groups share. Not `extends: true`: a project inheriting globalSetup would start the stack and bundle the workflows again. */
const common: TestProjectInlineConfiguration['test'] = {
  setupFiles: ['test/support/quiet-runtime.ts'],
  // Each file runs in its own process with its own worker and task queue.
  pool: 'forks',
  testTimeout: 120_000,
  hookTimeout: 180_000,
  // One retry: a test that fails and then passes is still named, as flaky with its first error, above CI's last
  // line (test/support/flaky-reporter.ts, scripts/test-summary.mjs); a test that fails twice fails the run.
  retry: 1,
  // A cancellation reaches an activity with its next heartbeat: stopping a deploy under way takes ~1 s here instead of 15 s.
  env: { METALFLOW_HEARTBEAT_THROTTLE_SECONDS: '1' },
};

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    reporters: ['default', 'json', './test/support/flaky-reporter.ts', './test/support/timing-reporter.ts'],
    outputFile: { json: 'test-results/vitest.json' },
    projects: [
      {
        test: { ...common, name: 'suite', include: ['test/**/*.test.ts'], exclude: [UNIT, ...ALONE, CHAOS, ...HEAVY_ONLY], maxWorkers: 2, sequence: { groupOrder: 0 } },
      },
      {
        // Pure tests (no stack, no worker) share their threads' module cache: 83 files in ~20 s instead of ~2 min of per-file process start-up and imports.
        test: { ...common, name: 'unit', include: [UNIT], pool: 'threads', isolate: false, maxWorkers: 2, sequence: { groupOrder: 0 } },
      },
      {
        test: { ...common, name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
