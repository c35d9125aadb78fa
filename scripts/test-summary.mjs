// Prints the plain "N passed, N failed" line from vitest's JSON report; a run
// that failed before reporting (install, type check, stack start) counts as one failure.
// Above it: where the run's time went (global setup, each group), the ten slowest files, each file over its time budget (test/budgets.json),
// each failed test and each test that passed only on its retry, with the first line
// of its error: CI keeps only the end of the output.
import { existsSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';

const [file, rcArg, flakyArg, timingArg, unhandledArg] = process.argv.slice(2);
const unhandledFile = unhandledArg ?? 'test-results/unhandled.json';
const flakyFile = flakyArg ?? 'test-results/flaky.json';
const timingFile = timingArg ?? 'test-results/timing.json';
const rc = Number(rcArg ?? 0);
let passed = 0;
let failed = 0;
let skipped = 0;
/**
 * Where the run's minutes went, from test/support/timing-reporter.ts: the type check (TYPECHECK_SECONDS, from
 * scripts/test.sh), the time before the first file (the global setup), and each group's wall time beside the sum
 * of its files' times.
 */
function printWhereTimeWent(timingFile) {
  if (!existsSync(timingFile)) return;
  const t = JSON.parse(readFileSync(timingFile, 'utf8'));
  if (!Array.isArray(t.files) || t.files.length === 0) return;
  const s = (ms) => `${Math.round(ms / 1000)} s`;
  const parts = [];
  if (process.env.TYPECHECK_SECONDS) parts.push(`type check ${process.env.TYPECHECK_SECONDS} s (beside the tests)`);
  parts.push(`before the first file (global setup) ${s(Math.min(...t.files.map((f) => f.startedAt)) - t.initAt)}`);
  for (const group of [...new Set(t.files.map((f) => f.group))]) {
    const fs = t.files.filter((f) => f.group === group);
    const wall = Math.max(...fs.map((f) => f.endedAt)) - Math.min(...fs.map((f) => f.startedAt));
    const sum = fs.reduce((a, f) => a + f.endedAt - f.startedAt, 0);
    parts.push(`${group} ${s(wall)} (${fs.length} files, ${s(sum)} of file time)`);
  }
  parts.push(`vitest in all ${s(t.endedAt - t.initAt)}`);
  console.log(`where the time went: ${parts.join('; ')}`);
}

/** Seconds each file took, the ten slowest, and the files over their budget: a budget is a file's share of the gate. */
function printDurations(results) {
  const budgets = existsSync('test/budgets.json') ? JSON.parse(readFileSync('test/budgets.json', 'utf8')) : { defaultSeconds: Infinity, files: {} };
  const files = results
    .filter((f) => Number.isFinite(f.startTime) && Number.isFinite(f.endTime))
    .map((f) => ({ name: relative(process.cwd(), f.name ?? ''), seconds: (f.endTime - f.startTime) / 1000 }))
    .sort((a, b) => b.seconds - a.seconds);
  if (files.length === 0) return;
  console.log('slowest test files (s):');
  for (const f of files.slice(0, 10)) console.log(`  ${f.seconds.toFixed(1).padStart(7)}  ${f.name}`);
  for (const f of files) {
    const budget = budgets.files?.[f.name] ?? budgets.defaultSeconds;
    if (f.seconds > budget) console.log(`OVER BUDGET ${f.name}: ${f.seconds.toFixed(1)} s (budget ${budget} s, test/budgets.json)`);
  }
}
const firstLine = (s) => String(s ?? '').split('\n').find((l) => l.trim() !== '')?.trim().slice(0, 300) ?? '';
if (file && existsSync(file)) {
  const report = JSON.parse(readFileSync(file, 'utf8'));
  passed = report.numPassedTests ?? 0;
  failed = report.numFailedTests ?? 0;
  skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
  printWhereTimeWent(timingFile);
  printDurations(report.testResults ?? []);
  for (const f of report.testResults ?? []) {
    const name = relative(process.cwd(), f.name ?? '');
    const failedTests = (f.assertionResults ?? []).filter((t) => t.status === 'failed');
    for (const t of failedTests) console.log(`FAILED ${name} > ${t.fullName}: ${firstLine(t.failureMessages?.[0])}`);
    if (f.status === 'failed' && failedTests.length === 0) console.log(`FAILED ${name} (the file itself): ${firstLine(f.message)}`);
  }
  // Errors outside any test fail the run with every test passed: each is named with its file and first stack lines.
  if (existsSync(unhandledFile)) {
    for (const e of JSON.parse(readFileSync(unhandledFile, 'utf8'))) {
      console.log(`UNHANDLED ERROR${e.file ? ` in ${relative(process.cwd(), e.file)}` : ''}: ${firstLine(e.message)}`);
      for (const l of String(e.stack ?? '').split('\n').slice(1, 6)) console.log(`    ${l.trim()}`);
    }
  }
  // Suites that crashed before running their tests report no test failures.
  if (rc !== 0 && failed === 0) failed = Math.max(1, report.numFailedTestSuites ?? 0);
} else if (rc !== 0) {
  failed = 1;
}
if (existsSync(flakyFile)) {
  for (const t of JSON.parse(readFileSync(flakyFile, 'utf8'))) {
    console.log(`FLAKY (passed on retry ${t.retries}) ${t.file} > ${t.name}: ${firstLine(t.firstError)}`);
  }
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
