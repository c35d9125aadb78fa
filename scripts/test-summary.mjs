// Prints the plain "N passed, N failed" line from vitest's JSON report; a run
// that failed before reporting (install, type check, stack start) counts as one failure.
import { existsSync, readFileSync } from 'node:fs';

const [file, rcArg] = process.argv.slice(2);
const rc = Number(rcArg ?? 0);
let passed = 0;
let failed = 0;
let skipped = 0;
if (file && existsSync(file)) {
  const report = JSON.parse(readFileSync(file, 'utf8'));
  passed = report.numPassedTests ?? 0;
  failed = report.numFailedTests ?? 0;
  skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
  // Suites that crashed before running their tests report no test failures.
  if (rc !== 0 && failed === 0) failed = Math.max(1, report.numFailedTestSuites ?? 0);
} else if (rc !== 0) {
  failed = 1;
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
