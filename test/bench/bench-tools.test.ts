/**
 * The benchmark's other tools, in `npm run test:heavy` only (each starts and
 * stops a bench stack of its own; `make test` keeps the lifecycle run of
 * bench.test.ts): `--driver floor` with `compare`, `--driver k8s`, and
 * `bench:memory`.
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

  it('--driver k8s drives the hosts through BareMetalHosts with the controller, counting kube-apiserver, etcd and the controller and the status writes and Events', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'mf-bench-')), 'k8s.json');
    // Builds kube-apiserver and etcd if this machine has none yet (scripts/kube-build.sh), starts its own and stops it.
    const run = spawnSync(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'bench', 'run.ts'), '--hosts', '2', '--driver', 'k8s', '--no-floor', '--idle-seconds', '1', '--out', out], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 900_000,
    });
    if (run.status !== 0) throw new Error(`bench exited ${run.status ?? run.signal}:\n${run.stdout}\n${run.stderr}`);
    expect(run.stdout).toContain('driven through BareMetalHosts');
    expect(run.stdout).toContain('kube-apiserver requests per host lifecycle');
    const r = JSON.parse(readFileSync(out, 'utf8')) as BenchResult;
    expect(r.options).toMatchObject({ hosts: 2, driver: 'k8s' });
    for (const p of PHASES) {
      expect(r.metalflow.phaseMs[p], p).toBeGreaterThan(0);
      // The controller reconciles and the API server serves every phase; etcd stores each write.
      const cpu = r.metalflow.cpuSecondsByPhase[p];
      for (const proc of ['temporal', 'worker', 'controller', 'apiserver', 'etcd'] as const) expect(cpu[proc], `${p} ${proc}`).toBeGreaterThan(0);
      expect(cpu.api, p).toBe(0);
    }
    const t = r.metalflow.temporal;
    expect(t.failedOperations).toBe(0);
    for (const op of ['enroll', 'inspect', 'prepare', 'provision', 'deprovision', 'delete']) expect(t.operationsPerHost[op], op).toBe(1);
    // The driver's own calls, once per host: two Secrets, the object, two changes of spec.image, the delete.
    const k = r.metalflow.kube!;
    expect(k.requestsPerHostByKind['POST secrets']).toBe(2);
    expect(k.requestsPerHostByKind['POST baremetalhosts']).toBe(1);
    expect(k.requestsPerHostByKind['DELETE baremetalhosts']).toBe(1);
    // The workflow wrote the status back at its transitions, with an Event each.
    expect(k.statusWritesPerHost).toBeGreaterThanOrEqual(8);
    expect(k.eventsPerHost).toBeGreaterThanOrEqual(8);
    expect(k.requestsPerHost).toBeCloseTo(Object.values(k.requestsPerHostByKind).reduce((a, b) => a + b, 0), 6);
    // The create's first activity came within the phase that the create began.
    expect(t.apiToFirstActivityMs.create.fromRequest?.n).toBe(2);
    expect(t.apiToFirstActivityMs.create.fromRequest!.max).toBeLessThan(r.metalflow.phaseMs.available);
    expect(r.targets.find((x) => x.name === 'orchestration CPU per host lifecycle')?.target).toContain('controller + kube-apiserver + etcd');
  }, 930_000);

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
