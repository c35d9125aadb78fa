/**
 * The benchmark's other tools, in `npm run test:heavy` only (each starts and
 * stops a bench stack of its own; `make test` keeps the lifecycle run of
 * bench.test.ts): `--driver floor` with `compare`, and `bench:memory`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import type { BenchResult, FloorOnlyResult } from '../../bench/report';

const PHASES = ['available', 'provisioned', 'deprovisioned', 'gone'] as const;

describe('npm run bench, its other drivers and tools', () => {
  it('--driver floor runs the floor alone: no worker or API, a result with only the floor, which compare takes as the floor', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'mf-bench-')), 'floor.json');
    const run = spawnSync(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'bench', 'run.ts'), '--hosts', '2', '--driver', 'floor', '--out', out], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 300_000,
    });
    if (run.status !== 0) throw new Error(`bench exited ${run.status ?? run.signal}:\n${run.stdout}\n${run.stderr}`);
    expect(run.stderr).not.toContain('bundling workflows');
    expect(run.stdout).toContain('floor alone (--driver floor): 2 hosts');
    const r = JSON.parse(readFileSync(out, 'utf8')) as FloorOnlyResult & Partial<BenchResult>;
    expect(r.floorOnly).toBe(true);
    expect(r.metalflow).toBeUndefined();
    expect(r.options).toMatchObject({ hosts: 2, driver: 'floor', floor: true });
    for (const p of PHASES) expect(r.floor.phaseMs[p], p).toBeGreaterThan(0);
    expect(r.floor.ironicRequestsPerHostByKind['PUT /v1/nodes/{node}/states/provision']).toBeGreaterThan(0);
    const compare = spawnSync(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'bench', 'run.ts'), 'compare', out], { cwd: REPO_ROOT, encoding: 'utf8' });
    expect(compare.status, compare.stderr).toBe(0);
    expect(compare.stdout).toContain('[1] floor (--driver floor) @');
  }, 330_000);

  it('bench:memory measures the worker with idle host workflows in three set-ups', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'bench', 'cache-memory.ts'), '--workflows', '5'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 300_000,
    });
    if (run.status !== 0) throw new Error(`bench:memory exited ${run.status ?? run.signal}:\n${run.stdout}\n${run.stderr}`);
    const rows = run.stdout.split('\n').filter((l) => /idle worker +\d+ MiB, with 5 hosts +\d+ MiB: -?\d+ KiB per host/.test(l));
    expect(rows.map((l) => l.trim().split(/ {2,}/)[0])).toEqual([
      'as shipped (cache 400)',
      'every host cached, shared modules',
      'every host cached, SDK default bundle',
    ]);
  }, 330_000);
});
