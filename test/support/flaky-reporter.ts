/**
 * Writes test-results/flaky.json: the tests that failed first and passed on
 * a retry (vitest.config.ts allows two), each with the first attempt's
 * error. scripts/test-summary.mjs prints them above CI's last line, so a
 * flaky test is named in the part of the output CI keeps, not hidden by its
 * retry.
 *
 * It also writes test-results/unhandled.json: the errors vitest caught outside any test (an unhandled rejection
 * in a file's background work, a failed teardown). They fail the run without failing a test, and vitest prints
 * them far above the part of the output CI keeps.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

export const FLAKY_REPORT = 'test-results/flaky.json';
export const UNHANDLED_REPORT = 'test-results/unhandled.json';

export interface FlakyTest {
  file: string;
  name: string;
  retries: number;
  firstError: string;
}

export interface UnhandledError {
  /** The test file the error came from, where vitest knows it. */
  file: string;
  message: string;
  stack: string;
}

/** What vitest hands a reporter for an error outside any test: an Error, or whatever was thrown or rejected. */
function describeUnhandled(e: unknown): UnhandledError {
  const o = (typeof e === 'object' && e !== null ? e : {}) as { message?: unknown; stack?: unknown; VITEST_TEST_PATH?: unknown; name?: unknown };
  const message = typeof o.message === 'string' ? `${typeof o.name === 'string' ? `${o.name}: ` : ''}${o.message}` : String(e);
  const stack = typeof o.stack === 'string' ? o.stack.split('\n').slice(0, 8).join('\n') : '';
  return { file: typeof o.VITEST_TEST_PATH === 'string' ? o.VITEST_TEST_PATH : '', message, stack };
}

export default class FlakyReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown> = []): void {
    mkdirSync(dirname(UNHANDLED_REPORT), { recursive: true });
    writeFileSync(UNHANDLED_REPORT, `${JSON.stringify(unhandledErrors.map(describeUnhandled), null, 2)}\n`);
    const flaky: FlakyTest[] = [];
    for (const m of testModules) {
      for (const t of m.children.allTests()) {
        const d = t.diagnostic();
        if (!d?.flaky) continue;
        const first = t.result().errors?.[0];
        flaky.push({ file: m.relativeModuleId, name: t.fullName, retries: d.retryCount, firstError: first?.message ?? '' });
      }
    }
    mkdirSync(dirname(FLAKY_REPORT), { recursive: true });
    writeFileSync(FLAKY_REPORT, `${JSON.stringify(flaky, null, 2)}\n`);
  }
}
