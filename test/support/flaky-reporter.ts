/**
 * Writes test-results/flaky.json: the tests that failed first and passed on
 * a retry (vitest.config.ts allows two), each with the first attempt's
 * error. scripts/test-summary.mjs prints them above CI's last line, so a
 * flaky test is named in the part of the output CI keeps, not hidden by its
 * retry.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

export const FLAKY_REPORT = 'test-results/flaky.json';

export interface FlakyTest {
  file: string;
  name: string;
  retries: number;
  firstError: string;
}

export default class FlakyReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
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
