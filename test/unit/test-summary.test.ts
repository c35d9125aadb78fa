/**
 * scripts/test-summary.mjs, the end of `make test`'s output (CI keeps only
 * the end): where the time went, the ten slowest files, files over their
 * budget, and the plain "N passed, N failed" as the very last line.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import type { RunTiming } from '../support/timing-reporter';

const T0 = 1_800_000_000_000;

/** A checkout-like folder with twelve files' reports: f00 took 1 s, f01 2 s, … f11 12 s; f10 and f11 ran alone. */
function fixture(budgets: object): string {
  const dir = mkdtempSync(join(tmpdir(), 'mf-summary-'));
  mkdirSync(join(dir, 'test'), { recursive: true });
  mkdirSync(join(dir, 'test-results'), { recursive: true });
  writeFileSync(join(dir, 'test', 'budgets.json'), JSON.stringify(budgets));
  const files = Array.from({ length: 12 }, (_, i) => ({ name: `test/f${String(i).padStart(2, '0')}.test.ts`, seconds: i + 1, group: i >= 10 ? 'alone' : 'suite' }));
  // The suite group starts 30 s after init and runs two at a time; the alone group after it, one at a time.
  const suiteAt = [T0 + 30_000, T0 + 30_000];
  const timing: RunTiming = { initAt: T0, files: [], endedAt: 0 };
  for (const f of files.filter((x) => x.group === 'suite')) {
    const lane = suiteAt[0]! <= suiteAt[1]! ? 0 : 1;
    const start = suiteAt[lane]!;
    timing.files.push({ file: f.name, group: 'suite', startedAt: start, endedAt: start + f.seconds * 1000 });
    suiteAt[lane] = start + f.seconds * 1000;
  }
  let aloneAt = Math.max(...suiteAt);
  for (const f of files.filter((x) => x.group === 'alone')) {
    timing.files.push({ file: f.name, group: 'alone', startedAt: aloneAt, endedAt: aloneAt + f.seconds * 1000 });
    aloneAt += f.seconds * 1000;
  }
  timing.endedAt = aloneAt + 2000;
  const report = {
    numPassedTests: 12,
    numFailedTests: 0,
    testResults: timing.files.map((f) => ({ name: join(dir, f.file), startTime: f.startedAt, endTime: f.endedAt, status: 'passed', assertionResults: [{ status: 'passed', fullName: 'x' }] })),
  };
  writeFileSync(join(dir, 'test-results', 'vitest.json'), JSON.stringify(report));
  writeFileSync(join(dir, 'test-results', 'timing.json'), JSON.stringify(timing));
  return dir;
}

function summary(dir: string): string[] {
  const run = spawnSync(process.execPath, [join(REPO_ROOT, 'scripts', 'test-summary.mjs'), 'test-results/vitest.json', '0'], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, TYPECHECK_SECONDS: '41' },
  });
  expect(run.status, run.stderr).toBe(0);
  return run.stdout.trimEnd().split('\n');
}

describe('the end of make test', () => {
  it('ends with the plain count, the ten slowest files and the files over budget above it, and where the time went', () => {
    const lines = summary(fixture({ defaultSeconds: 10, files: { 'test/f11.test.ts': 20 } }));
    expect(lines.at(-1)).toBe('12 passed, 0 failed');
    const slowest = lines.indexOf('slowest test files (s):');
    expect(slowest).toBeGreaterThan(0);
    expect(lines.slice(slowest + 1, slowest + 11).map((l) => l.trim())).toEqual(
      Array.from({ length: 10 }, (_, i) => `${(12 - i).toFixed(1)}  test/f${String(11 - i).padStart(2, '0')}.test.ts`),
    );
    // f11 (12 s) is within its own budget of 20 s; f10 (11 s) is over the default 10 s, f09 (10 s) at it.
    expect(lines.filter((l) => l.startsWith('OVER BUDGET'))).toEqual(['OVER BUDGET test/f10.test.ts: 11.0 s (budget 10 s, test/budgets.json)']);
    const where = lines.find((l) => l.startsWith('where the time went: '));
    // Suite: ten files of 1..10 s (55 s) two at a time, 30 s of wall; alone: 11 + 12 s one after the other.
    expect(where).toBe(
      'where the time went: type check 41 s (beside the tests); before the first file (global setup) 30 s; suite 30 s (10 files, 55 s of file time); alone 23 s (2 files, 23 s of file time); vitest in all 85 s',
    );
  });

  it('budgets only files that exist (a renamed file would lose its budget silently)', () => {
    const budgets = JSON.parse(readFileSync(join(REPO_ROOT, 'test', 'budgets.json'), 'utf8')) as { defaultSeconds: number; files: Record<string, number> };
    expect(budgets.defaultSeconds).toBeGreaterThan(0);
    expect(Object.keys(budgets.files).filter((f) => !existsSync(join(REPO_ROOT, f)))).toEqual([]);
  });
});
