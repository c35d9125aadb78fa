/**
 * Temporal's time-skipping test server (scripts/temporal-test-server.sh, installed by
 * scripts/install.sh): timers of minutes or hours fire as soon as every workflow waits,
 * so tier 0 runs a workflow's real timers, backoff and continue-as-new at their
 * production values without a stack.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { REPO_ROOT } from '../../config/env';

const LAUNCHER = join(REPO_ROOT, 'scripts', 'temporal-test-server.sh');
const VERSION = process.env.TEMPORAL_TEST_SERVER_VERSION ?? '1.31.0';

/** Why the server cannot start here, or undefined when it can (`make test` installs it). */
export function timeSkippingUnavailable(): string | undefined {
  const classpath = join(REPO_ROOT, '.cache', 'temporal-test-server', VERSION, 'classpath.txt');
  return existsSync(classpath) ? undefined : `Temporal's time-skipping test server is not installed (bash scripts/temporal-test-server.sh install)`;
}

/** Starts tried before a slow start fails the file. */
const STARTS = 3;

/**
 * The SDK gives the server 5 s to listen (sdk-core's ephemeral_server, not configurable); a JVM starting on two busy
 * cores can take longer, so a start that timed out is tried again on a fresh port. Any other error fails at once.
 */
export async function timeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: LAUNCHER } } });
    } catch (err) {
      if (attempt >= STARTS || !/did not start within/.test(String(err))) throw err;
      console.warn(`[time-skipping] the test server did not listen within the SDK's 5 s (start ${attempt} of ${STARTS}); starting it again`);
    }
  }
}
