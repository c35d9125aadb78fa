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

export function timeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: LAUNCHER } } });
}
