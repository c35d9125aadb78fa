/**
 * The benchmark still works: one run with 3 hosts on the bench stack's own
 * ports (not the test stack's), checking the report's shape and that its
 * figures are sane. Never a timed assertion: targets are the benchmark's
 * business, not the suite's.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import type { BenchResult, FloorOnlyResult } from '../../bench/report';

const PHASES = ['available', 'provisioned', 'deprovisioned', 'gone'] as const;

describe('npm run bench', () => {
  it('drives 3 hosts through the lifecycle with metalflow (per-host API calls, then fleet operations) and the floor, continuing each host as new once, and writes the report', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'mf-bench-')), 'result.json');
    // bench/run.ts starts the bench stack (21233/21385/...) if it is not running and stops what it started.
    const run = spawnSync(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'bench', 'run.ts'), '--hosts', '3', '--idle-seconds', '1', '--max-history-events', '40', '--fleet', '--out', out], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 540_000,
    });
    if (run.status !== 0) throw new Error(`bench exited ${run.status ?? run.signal}:\n${run.stdout}\n${run.stderr}`);
    expect(run.stdout).toContain('create -> available');
    expect(run.stdout).toContain('targets');

    const r = JSON.parse(readFileSync(out, 'utf8')) as BenchResult;
    expect(r.floor).toBeDefined();
    const floor = r.floor!;
    expect(r.options).toMatchObject({ hosts: 3, concurrency: 3, redfish: false, observer: 'visibility-list' });
    expect(r.options.phases).toEqual([...PHASES]);
    for (const p of PHASES) {
      expect(r.metalflow.phaseMs[p]).toBeGreaterThan(0);
      expect(floor.phaseMs[p]).toBeGreaterThan(0);
      expect(r.ratio[p]).toBeGreaterThan(0);
      // Temporal works in every phase, and no process can use more than the machine's cores for the phase's length.
      expect(r.metalflow.cpuSecondsByPhase[p].temporal).toBeGreaterThan(0);
      expect(r.metalflow.cpuSecondsByPhase[p].temporal).toBeLessThanOrEqual((r.metalflow.phaseMs[p] / 1000) * cpus().length);
    }
    expect(r.metalflow.cumulativeMs.gone).toBeGreaterThanOrEqual(r.metalflow.cumulativeMs.provisioned);
    expect(r.metalflow.cumulativeMs.provisioned).toBeGreaterThanOrEqual(r.metalflow.cumulativeMs.available);

    const t = r.metalflow.temporal;
    expect(t.failedOperations).toBe(0);
    for (const op of ['enroll', 'inspect', 'prepare', 'provision', 'deprovision', 'delete']) {
      expect(t.stepLatencyMs[op]?.n, op).toBe(3);
      expect(t.stepLatencyMs[op]!.p50, op).toBeGreaterThan(0);
      expect(t.operationsPerHost[op], op).toBe(1);
    }
    expect(t.apiToFirstActivityMs.create.fromRequest?.n).toBe(3);
    expect(t.apiToFirstActivityMs.create.fromRequest!.p99).toBeGreaterThan(0);
    // Operations run inside the host workflow: a host's events are its workflow's.
    expect(t.historyEventsPerHost!.mean).toBe(t.hostWorkflowEventsPerHost!.mean);
    // A lifecycle is ~93 host-workflow events: with the threshold at 40 every host continues as new
    // at an idle point, and its state goes with it (each operation above ran exactly once).
    expect(t.hostsContinuedAsNew).toBe(3);
    expect(t.hostWorkflowEventsPerHost!.mean).toBeGreaterThan(t.maxHostRunEvents);
    expect(t.maxHostRunEvents).toBeGreaterThan(10);
    expect(r.options.maxHistoryEvents).toBe(40);
    // The create's breakdown reads each host's first run, not the run it continued into:
    // every segment is a forward step in time (the 1,000-host run once printed negative ones).
    const segments = Object.entries(t.createBreakdownMs);
    expect(segments.length).toBeGreaterThan(0);
    for (const [segment, p] of segments) {
      expect(p?.n, segment).toBe(3);
      expect(p!.p50, segment).toBeGreaterThanOrEqual(0);
      expect(p!.max, segment).toBeLessThan(r.metalflow.phaseMs.available);
    }

    // Same Ironic verbs on both sides; only poll reads may differ.
    for (const d of [r.metalflow, floor]) {
      expect(d.ironicRequestsPerHost).toBeGreaterThan(10);
      expect(d.ironicRequestsPerHostByKind['POST /v1/nodes']).toBe(1);
      expect(d.ironicRequestsPerHostByKind['DELETE /v1/nodes/{node}']).toBe(1);
    }
    expect(floor.ironicRequestsPerHostByKind['PUT /v1/nodes/{node}/states/provision']).toBe(
      r.metalflow.ironicRequestsPerHostByKind['PUT /v1/nodes/{node}/states/provision'],
    );

    expect(r.metalflow.worker.peakRssMiB).toBeGreaterThan(20);
    expect(r.metalflow.worker.idleRssMiB).toBeGreaterThan(20);
    expect(r.metalflow.worker.idleCpuShare?.ironic).toBeGreaterThanOrEqual(0);
    expect(r.metalflow.worker.idleCpuShare?.ironic).toBeLessThanOrEqual(1);
    expect(r.metalflow.worker.cpuSeconds).toBeGreaterThan(0);
    expect(r.metalflow.api.peakRssMiB).toBeGreaterThan(20);
    expect(r.metalflow.api.cpuSeconds).toBeGreaterThan(0);
    expect(r.targets.map((x) => x.name)).toContain('API call -> first activity p99');

    // --fleet: the lifecycle again with one fleet operation per phase after the creates, each host acted on once.
    expect(run.stdout).toContain('POST -> first host asked');
    const f = r.fleet!;
    expect(f.operations.map((o) => o.phase)).toEqual(['provisioned', 'deprovisioned', 'gone']);
    for (const o of f.operations) {
      expect(o.counts.succeeded, o.phase).toBe(3);
      expect(o.maxConcurrent, o.phase).toBe(3);
      expect(o.startToFirstAskMs, o.phase).toBeGreaterThanOrEqual(0);
      expect(o.startToFirstAskMs, o.phase).toBeLessThan(f.phaseMs[o.phase]);
      expect(o.lastRunHistoryEvents, o.phase).toBeGreaterThan(10);
    }
    expect(f.operations[0]!.startToFirstOperationMs).toBeGreaterThanOrEqual(f.operations[0]!.startToFirstAskMs!);
    for (const p of PHASES) expect(f.phaseMs[p], p).toBeGreaterThan(0);
    expect(f.temporal.failedOperations).toBe(0);
    for (const op of ['provision', 'deprovision', 'delete']) expect(f.temporal.operationsPerHost[op], op).toBe(1);
  }, 600_000);

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
