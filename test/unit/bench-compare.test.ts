import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PHASES, type Phase } from '../../bench/common';
import { compareFiles, compareResults } from '../../bench/compare';
import { evaluateTargets, formatFloorOnly, formatTable, resultFileName, type BenchResult, type CpuByProcess, type DriverFigures, type FloorOnlyResult } from '../../bench/report';

const cpu = (temporal: number, worker = 0, api = 0, ironic = 0): CpuByProcess => ({ temporal, ironic, worker, api, bench: 0 });
const byPhase = <T,>(f: (p: Phase) => T): Record<Phase, T> => Object.fromEntries(PHASES.map((p) => [p, f(p)])) as Record<Phase, T>;

/** A driver's figures: each phase takes `seconds[phase]`, each phase's CPU is `cpuPerPhase`. */
function figures(seconds: number[], cpuPerPhase: CpuByProcess, ironicPerHost: number): DriverFigures {
  let sum = 0;
  const cumulative = seconds.map((x) => (sum += x * 1000));
  return {
    phaseMs: byPhase((p) => seconds[PHASES.indexOf(p)]! * 1000),
    cumulativeMs: byPhase((p) => cumulative[PHASES.indexOf(p)]!),
    ironicRequestsPerHost: ironicPerHost,
    ironicRequestsPerHostByPhase: byPhase(() => ironicPerHost / 4),
    ironicRequestsPerHostByKind: {},
    cpuSecondsByPhase: byPhase(() => cpuPerPhase),
  };
}

function result(o: { commit: string; driver: 'api' | 'fleet' | 'k8s'; hosts?: number; seconds: number[]; floorSeconds?: number[] }): BenchResult {
  const hosts = o.hosts ?? 1000;
  const temporal = {
    historyEventsPerHost: { p50: o.driver === 'fleet' ? 101 : 100, p95: 0, p99: 0, max: 0, mean: 0, n: hosts },
    apiToFirstActivityMs: { create: { fromRequest: { p50: 1, p95: 2, p99: 2468.4, max: 3, mean: 1, n: hosts } }, setImage: {} },
    failedOperations: 0,
  } as unknown as BenchResult['metalflow']['temporal'];
  return {
    version: 1,
    date: '2026-11-28T04:00:00.000Z',
    commit: o.commit,
    machine: { cpus: 2, cpuModel: 'x', memGiB: 24, node: 'v20', os: 'linux' },
    options: { hosts, concurrency: 200, redfish: false, floorPollMs: 100, idleSeconds: 60, phases: [...PHASES], driver: o.driver },
    metalflow: {
      ...figures(o.seconds, cpu(100, 50, 10), 40),
      temporal,
      worker: {} as BenchResult['metalflow']['worker'],
      api: { peakRssMiB: 1, cpuSeconds: 1 },
      apiServerErrors: { count: 3, byMessage: {} },
      ...(o.driver === 'fleet'
        ? { fleetOperations: [{ phase: 'provisioned', name: 'p', maxConcurrent: 200, runs: 3, lastRunHistoryEvents: 9, counts: {} as never, startToFirstAskMs: 56, startToFirstOperationMs: 1937 }] }
        : {}),
    },
    ...(o.floorSeconds ? { floor: figures(o.floorSeconds, cpu(0, 0, 0, 300), 38) } : {}),
    ratio: {},
    targets: [],
  };
}

describe('npm run bench -- compare', () => {
  it('puts the fleet run, the per-host API run and its floor side by side, with each phase against the floor', () => {
    const api = result({ commit: 'aaaaaaa', driver: 'api', seconds: [800, 900, 600, 300], floorSeconds: [400, 450, 500, 200] });
    const fleet = result({ commit: 'aaaaaaa', driver: 'fleet', seconds: [850, 990, 650, 290] });
    const table = compareResults([
      { file: 'bench/results/api.json', result: api },
      { file: 'bench/results/fleet.json', result: fleet },
    ]);
    expect(table).toContain('[1] per-host API @ aaaaaaa (api.json)');
    expect(table).toContain('[2] floor @ aaaaaaa (api.json)');
    expect(table).toContain('[3] fleet @ aaaaaaa (fleet.json)');
    const row = (name: string) => table.split('\n').find((l) => l.trimStart().startsWith(name))!.trim().split(/\s{2,}/);
    // provision: 900 s against the floor's 450 s; the fleet's 990 s against the same floor.
    expect(row('provision -> provisioned')).toEqual(['provision -> provisioned', '900.0 s (2.00)', '450.0 s', '990.0 s (2.20)']);
    expect(row('whole lifecycle')).toEqual(['whole lifecycle (first create -> all gone)', '2600.0 s', '1550.0 s', '2780.0 s']);
    // 4 phases x 100 CPU s over 1,000 hosts; orchestration adds the worker's and the API's.
    expect(row('Temporal CPU per host lifecycle')).toEqual(['Temporal CPU per host lifecycle', '0.40 s', '-', '0.40 s']);
    expect(row('orchestration CPU per host lifecycle')).toEqual(['orchestration CPU per host lifecycle', '0.64 s', '-', '0.64 s']);
    expect(row('Ironic CPU per host lifecycle')[2]).toBe('1.20 s');
    expect(row('API call -> first activity p99')).toEqual(['API call -> first activity p99 (create)', '2468 ms', '-', '2468 ms']);
    expect(row('fleet POST -> first host asked / first operation, provision')).toEqual([
      'fleet POST -> first host asked / first operation, provision -> provisioned',
      '-',
      '-',
      '56 / 1937 ms',
    ]);
    expect(table).not.toContain('NOTE');
  });

  it('takes the floor of a floor-only run (--driver floor) as what the metalflow runs of the same commit compare with', () => {
    const api = result({ commit: 'aaaaaaa', driver: 'api', seconds: [800, 900, 600, 300] });
    const fleet = result({ commit: 'aaaaaaa', driver: 'fleet', seconds: [850, 990, 650, 290] });
    const { metalflow: _m, ratio: _r, targets: _t, ...head } = result({ commit: 'aaaaaaa', driver: 'api', seconds: [1, 1, 1, 1] });
    const floorOnly: FloorOnlyResult = { ...head, options: { ...head.options, driver: 'floor', floor: true }, floorOnly: true, floor: figures([400, 450, 500, 200], cpu(0, 0, 0, 300), 38) };
    const table = compareResults([
      { file: 'api.json', result: api },
      { file: 'fleet.json', result: fleet },
      { file: 'floor.json', result: floorOnly },
    ]);
    expect(table).toContain('[3] floor (--driver floor) @ aaaaaaa (floor.json)');
    const row = (name: string) => table.split('\n').find((l) => l.trimStart().startsWith(name))!.trim().split(/\s{2,}/);
    expect(row('provision -> provisioned')).toEqual(['provision -> provisioned', '900.0 s (2.00)', '990.0 s (2.20)', '450.0 s']);
    expect(row('Temporal CPU per host lifecycle')).toEqual(['Temporal CPU per host lifecycle', '0.40 s', '0.40 s', '-']);
    expect(table).not.toContain('NOTE');
    expect(formatFloorOnly(floorOnly)).toContain('whole lifecycle 1550.0 s (2323 hosts per hour); Ironic requests per host 38.0');
    expect(resultFileName(floorOnly, 'f00d00')).toBe('2026-11-28-aaaaaaa-floor-f00d00.json');
  });

  it('puts a BareMetalHost run (--driver k8s) beside the API run, its controller, kube-apiserver and etcd in the orchestration CPU', () => {
    const api = result({ commit: 'aaaaaaa', driver: 'api', seconds: [800, 900, 600, 300], floorSeconds: [400, 450, 500, 200] });
    const k8s = result({ commit: 'aaaaaaa', driver: 'k8s', seconds: [820, 910, 610, 330] });
    // Per phase: Temporal 100, worker 50, controller 20, kube-apiserver 40, etcd 10 CPU s; no API process.
    k8s.metalflow.cpuSecondsByPhase = byPhase(() => ({ ...cpu(100, 50, 0), controller: 20, apiserver: 40, etcd: 10 }));
    k8s.metalflow.kube = {
      requestsPerHost: 31.5,
      requestsPerHostByPhase: byPhase(() => 31.5 / 4),
      requestsPerHostByKind: { 'PATCH baremetalhosts/status': 12, 'POST events': 12, 'POST secrets': 2, 'POST baremetalhosts': 1 },
      statusWritesPerHost: 12,
      eventsPerHost: 12,
    };
    const table = compareResults([
      { file: 'api.json', result: api },
      { file: 'k8s.json', result: k8s },
    ]);
    expect(table).toContain('[3] BareMetalHosts (k8s) @ aaaaaaa (k8s.json)');
    const row = (name: string) => table.split('\n').find((l) => l.trimStart().startsWith(name))!.trim().split(/\s{2,}/);
    expect(row('provision -> provisioned')).toEqual(['provision -> provisioned', '900.0 s (2.00)', '450.0 s', '910.0 s (2.02)']);
    // 4 phases x (100 + 50 + 20 + 40 + 10) CPU s over 1,000 hosts; the API run's own sum has its API's 10.
    expect(row('orchestration CPU per host lifecycle')).toEqual(['orchestration CPU per host lifecycle', '0.64 s', '-', '0.88 s']);
    expect(row('of which controller + kube-apiserver + etcd')).toEqual(['of which controller + kube-apiserver + etcd', '-', '-', '0.28 s']);
    expect(row('status writes; Events per host')).toEqual(['status writes; Events per host', '-', '-', '12.0; 12.0']);
    expect(row('kube-apiserver requests per host')).toEqual(['kube-apiserver requests per host', '-', '-', '31.5']);
    // Its own targets: the Kubernetes path's orchestration CPU and whole lifecycle.
    const k8sWithFloor = { ...k8s, floor: api.floor };
    const targets = evaluateTargets(k8sWithFloor);
    expect(targets.find((t) => t.name === 'orchestration CPU per host lifecycle')).toMatchObject({
      target: '<= 0.55 s (Temporal + worker + controller + kube-apiserver + etcd)',
      measured: '0.88 s',
      met: false,
    });
    expect(targets.find((t) => t.name === 'metalflow / floor, whole lifecycle')).toMatchObject({ target: '<= 1.05 (1,000 hosts)', measured: (2670 / 1550).toFixed(2), met: false });
    const printable = {
      ...k8sWithFloor,
      targets,
      metalflow: {
        ...k8sWithFloor.metalflow,
        temporal: { ...k8sWithFloor.metalflow.temporal, stepLatencyMs: {}, createBreakdownMs: {}, operationsPerHost: {}, executions: 0, maxHostRunEvents: 0, hostsContinuedAsNew: 0 },
        worker: { peakRssMiB: 100, cpuSeconds: 1 },
        controller: { peakRssMiB: 90, cpuSeconds: 80 },
      },
    };
    expect(formatTable(printable)).toMatch(/controller: peak RSS 90 MiB/);
    expect(formatTable(printable)).toMatch(/status writes 12\.0, Events 12\.0 per host/);
  });

  it('says when the runs are of other commits or shapes', () => {
    const table = compareResults([
      { file: 'a.json', result: result({ commit: 'aaaaaaa', driver: 'api', seconds: [1, 1, 1, 1] }) },
      { file: 'b.json', result: result({ commit: 'bbbbbbb', driver: 'fleet', hosts: 100, seconds: [1, 1, 1, 1] }) },
    ]);
    expect(table).toContain('NOTE: the runs differ in shape (1000 hosts, concurrency 200 / 100 hosts, concurrency 200)');
    expect(table).toContain('NOTE: the runs are of different commits');
  });

  it("names a run's power sentinel in its column, and nothing for runs without one", () => {
    const off = result({ commit: 'aaaaaaa', driver: 'api', seconds: [1, 1, 1, 1] });
    const on = result({ commit: 'aaaaaaa', driver: 'api', seconds: [1, 1, 1, 1], floorSeconds: [1, 1, 1, 1] });
    on.options.powerSentinelSeconds = 30;
    const table = compareResults([
      { file: 'off.json', result: off },
      { file: 'on.json', result: on },
    ]);
    expect(table).toContain('per-host API @ aaaaaaa (off.json)');
    expect(table).toContain('per-host API @ aaaaaaa, sentinel 30 s (on.json)');
    // The floor beside it has no sentinel.
    expect(table).toContain('floor @ aaaaaaa (on.json)');
  });

  it('reads result files and refuses what is not one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mf-compare-'));
    writeFileSync(join(dir, 'r.json'), JSON.stringify(result({ commit: 'ccccccc', driver: 'api', seconds: [1, 2, 3, 4] })));
    writeFileSync(join(dir, 'x.json'), JSON.stringify({ hello: 1 }));
    expect(compareFiles([join(dir, 'r.json')])).toContain('per-host API @ ccccccc (r.json)');
    expect(() => compareFiles([join(dir, 'x.json')])).toThrow(/x\.json is not a benchmark result/);
    expect(() => compareFiles([])).toThrow(/name at least one result file/);
  });

  it('names result files so that two runs of one commit on one day do not overwrite each other', () => {
    const api = result({ commit: 'aaaaaaa', driver: 'api', seconds: [1, 1, 1, 1] });
    const fleet = result({ commit: 'aaaaaaa', driver: 'fleet', seconds: [1, 1, 1, 1] });
    expect(resultFileName(api, 'abc123')).toBe('2026-11-28-aaaaaaa-api-abc123.json');
    expect(resultFileName(fleet, 'def456')).toBe('2026-11-28-aaaaaaa-fleet-def456.json');
    expect(resultFileName({ ...api, options: { ...api.options, temporal: 'postgres' } }, 'abc123')).toBe('2026-11-28-aaaaaaa-api-postgres-abc123.json');
  });
});
