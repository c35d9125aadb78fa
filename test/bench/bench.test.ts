/**
 * The benchmark still works: one run with 2 hosts (3 in the heavy tier) on the
 * bench stack's own ports (not the test stack's), checking the report's shape and that its
 * figures hold together (each bounded by what the run itself measured: a
 * percentile by the next, a segment by its phase, CPU by wall time and cores,
 * a total by its parts). Never a timed assertion: targets are the benchmark's
 * business, not the suite's.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import type { Percentiles } from '../../bench/common';
import type { BenchResult, DriverFigures, FloorOnlyResult } from '../../bench/report';
import { WORKFLOW_BUNDLE_PATH } from '../support/env';
import { HEAVY } from '../support/heavy';
import { processBundle } from '../support/process-bundles';

const PHASES = ['available', 'provisioned', 'deprovisioned', 'gone'] as const;
/** Two show hosts at once (each phase's concurrency, percentiles over hosts); the run's fixed costs dwarf a third. */
const HOSTS = HEAVY ? 3 : 2;
const PROCESSES = ['temporal', 'ironic', 'worker', 'api', 'bench'] as const;

/** Percentiles of one figure are ordered, and none is beyond `ceiling` (what contains the figure). */
function expectOrdered(label: string, p: Percentiles | undefined, n: number, ceiling: number): void {
  expect(p?.n, label).toBe(n);
  expect(p!.p50, label).toBeGreaterThan(0);
  expect(p!.p50, label).toBeLessThanOrEqual(p!.p95);
  expect(p!.p95, label).toBeLessThanOrEqual(p!.p99);
  expect(p!.p99, label).toBeLessThanOrEqual(p!.max);
  expect(p!.mean, label).toBeLessThanOrEqual(p!.max);
  expect(p!.max, label).toBeLessThan(ceiling);
}

/** A driver's totals are the sums of its parts: cumulative time of its phases, Ironic requests of its phases and kinds. */
function expectSums(label: string, d: DriverFigures): void {
  let sum = 0;
  for (const p of PHASES) {
    sum += d.phaseMs[p];
    expect(d.cumulativeMs[p], `${label} ${p}`).toBe(sum);
  }
  const byPhase = PHASES.reduce((a, p) => a + d.ironicRequestsPerHostByPhase[p], 0);
  const byKind = Object.values(d.ironicRequestsPerHostByKind).reduce((a, b) => a + b, 0);
  expect(d.ironicRequestsPerHost, label).toBeCloseTo(byPhase, 6);
  expect(d.ironicRequestsPerHost, label).toBeCloseTo(byKind, 6);
}

describe('npm run bench', () => {
  it(`drives ${HOSTS} hosts through the lifecycle with metalflow (per-host API calls, then fleet operations) and the floor, continuing each host as new once, and writes the report`, () => {
    const out = join(mkdtempSync(join(tmpdir(), 'mf-bench-')), 'result.json');
    // bench/run.ts starts the bench stack (21233/21385/...) if it is not running and stops what it started.
    // The run's workflow bundle (the global setup's, from the same checkout and options) instead of a bundle of its own.
    const bundle = existsSync(WORKFLOW_BUNDLE_PATH) ? ['--workflow-bundle', WORKFLOW_BUNDLE_PATH] : [];
    // And its worker from the run's bundle of the worker's entry point, not through tsx (seconds of CPU).
    const worker = processBundle('worker');
    if (worker) bundle.push('--process-bundle', `worker=${worker}`);
    const args = ['--hosts', String(HOSTS), '--idle-seconds', '1', '--max-history-events', '40', '--fleet', '--out', out, ...bundle];
    const run = spawnSync(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'bench', 'run.ts'), ...args], {
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
    expect(r.options).toMatchObject({ hosts: HOSTS, concurrency: HOSTS, redfish: false, observer: 'visibility-list' });
    expect(r.options.phases).toEqual([...PHASES]);
    for (const p of PHASES) {
      expect(r.metalflow.phaseMs[p]).toBeGreaterThan(0);
      expect(floor.phaseMs[p]).toBeGreaterThan(0);
      expect(r.ratio[p], p).toBeCloseTo(r.metalflow.phaseMs[p] / floor.phaseMs[p], 9);
      // Temporal, Ironic and the worker work in every phase, and no process can use more than the machine's cores
      // for the phase's length (a figure past it was read from the wrong process or the wrong interval).
      const cpu = r.metalflow.cpuSecondsByPhase[p];
      for (const busy of ['temporal', 'ironic', 'worker'] as const) expect(cpu[busy], `${p} ${busy}`).toBeGreaterThan(0);
      for (const proc of PROCESSES) {
        expect(cpu[proc], `${p} ${proc}`).toBeGreaterThanOrEqual(0);
        expect(cpu[proc], `${p} ${proc}`).toBeLessThanOrEqual((r.metalflow.phaseMs[p] / 1000) * cpus().length);
      }
    }
    expectSums('metalflow', r.metalflow);
    expectSums('floor', floor);

    const t = r.metalflow.temporal;
    expect(t.failedOperations).toBe(0);
    // No operation of a host outlasts the lifecycle it is part of.
    for (const op of ['enroll', 'inspect', 'prepare', 'provision', 'deprovision', 'delete']) {
      expectOrdered(op, t.stepLatencyMs[op], HOSTS, r.metalflow.cumulativeMs.gone);
      expect(t.operationsPerHost[op], op).toBe(1);
    }
    // The create's first activity starts within the phase that the create began.
    expectOrdered('API call -> first activity', t.apiToFirstActivityMs.create.fromRequest, HOSTS, r.metalflow.phaseMs.available);
    // Operations run inside the host workflow: a host's events are its workflow's.
    expect(t.historyEventsPerHost!.mean).toBe(t.hostWorkflowEventsPerHost!.mean);
    // A lifecycle is ~93 host-workflow events: with the threshold at 40 every host continues as new
    // at an idle point, and its state goes with it (each operation above ran exactly once).
    expect(t.hostsContinuedAsNew).toBe(HOSTS);
    expect(t.hostWorkflowEventsPerHost!.mean).toBeGreaterThan(t.maxHostRunEvents);
    expect(t.maxHostRunEvents).toBeGreaterThan(10);
    expect(r.options.maxHistoryEvents).toBe(40);
    // The create's breakdown reads each host's first run, not the run it continued into:
    // every segment is a forward step in time (the 1,000-host run once printed negative ones).
    const segments = Object.entries(t.createBreakdownMs);
    expect(segments.length).toBeGreaterThan(0);
    for (const [segment, p] of segments) {
      expect(p?.n, segment).toBe(HOSTS);
      expect(p!.p50, segment).toBeGreaterThanOrEqual(0);
      expect(p!.p50, segment).toBeLessThanOrEqual(p!.max);
      expect(p!.max, segment).toBeLessThan(r.metalflow.phaseMs.available);
    }
    // The segments are the create's path cut in pieces, for the same hosts: their means add up to the whole path's.
    const segmentMeans = segments.reduce((a, [, p]) => a + p!.mean, 0);
    expect(segmentMeans).toBeCloseTo(t.apiToFirstActivityMs.create.fromRequest!.mean, 6);

    // Same Ironic verbs on both sides; only poll reads may differ.
    for (const d of [r.metalflow, floor]) {
      expect(d.ironicRequestsPerHost).toBeGreaterThan(10);
      expect(d.ironicRequestsPerHostByKind['POST /v1/nodes']).toBe(1);
      expect(d.ironicRequestsPerHostByKind['DELETE /v1/nodes/{node}']).toBe(1);
    }
    expect(floor.ironicRequestsPerHostByKind['PUT /v1/nodes/{node}/states/provision']).toBe(
      r.metalflow.ironicRequestsPerHostByKind['PUT /v1/nodes/{node}/states/provision'],
    );

    // Memory between a live Node process's floor and the machine's memory; CPU shares within the machine's cores.
    const machineMiB = r.machine.memGiB * 1024;
    for (const [label, mib] of [['worker peak', r.metalflow.worker.peakRssMiB], ['worker idle', r.metalflow.worker.idleRssMiB], ['api peak', r.metalflow.api.peakRssMiB]] as const) {
      expect(mib, label).toBeGreaterThan(20);
      expect(mib, label).toBeLessThan(machineMiB);
    }
    for (const proc of PROCESSES) {
      expect(r.metalflow.worker.idleCpuShare?.[proc], proc).toBeGreaterThanOrEqual(0);
      expect(r.metalflow.worker.idleCpuShare?.[proc], proc).toBeLessThanOrEqual(r.machine.cpus);
    }
    expect(r.metalflow.worker.cpuSeconds).toBeGreaterThan(0);
    expect(r.metalflow.api.cpuSeconds).toBeGreaterThan(0);
    expect(r.targets.map((x) => x.name)).toContain('API call -> first activity p99');

    // --fleet: the lifecycle again with one fleet operation per phase after the creates, each host acted on once.
    expect(run.stdout).toContain('POST -> first host asked');
    const f = r.fleet!;
    expect(f.operations.map((o) => o.phase)).toEqual(['provisioned', 'deprovisioned', 'gone']);
    expectSums('fleet', f);
    for (const o of f.operations) {
      expect(o.counts.succeeded, o.phase).toBe(HOSTS);
      expect(o.maxConcurrent, o.phase).toBe(HOSTS);
      expect(o.startToFirstAskMs, o.phase).toBeGreaterThan(0);
      expect(o.startToFirstAskMs, o.phase).toBeLessThan(f.phaseMs[o.phase]);
      expect(o.lastRunHistoryEvents, o.phase).toBeGreaterThan(10);
    }
    expect(f.operations[0]!.startToFirstOperationMs).toBeGreaterThanOrEqual(f.operations[0]!.startToFirstAskMs!);
    for (const p of PHASES) expect(f.phaseMs[p], p).toBeGreaterThan(0);
    expect(f.temporal.failedOperations).toBe(0);
    for (const op of ['provision', 'deprovision', 'delete']) expect(f.temporal.operationsPerHost[op], op).toBe(1);
  }, 600_000);
});
