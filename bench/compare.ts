/**
 * `npm run bench -- compare <result.json>...`: several runs' figures side by side. A 1,000-host comparison
 * of the fleet driver, the per-host API driver and the floor is made of runs of one commit, since one run
 * of all three would outlast a working session on a slow machine: `--hosts 1000 --concurrency 200` (API
 * and floor) or, shorter, the same with `--no-floor` and then `--driver floor` (the floor alone), and the
 * same with `--driver fleet --no-floor`; the table issue 11 asks for is made from their result files. Each
 * metalflow lifecycle is a column (a `--fleet` run gives two), each floor too (the first floor is what the
 * phases are compared with); the runs' commits, host counts and concurrency head it, and a difference in
 * host count or concurrency is said above the table, since their times would not compare. */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { PHASE_LABEL, type Phase } from './common';
import type { FleetPhaseFigures } from './fleet-driver';
import { isFloorOnly, orchestrationCpu, type BenchResult, type CpuByProcess, type DriverFigures, type FloorOnlyResult, type KubeFigures } from './report';

interface Column {
  label: string;
  figures: DriverFigures;
  hosts: number;
  /** Metalflow lifecycles only (a floor has no Temporal). */
  temporal?: BenchResult['metalflow']['temporal'];
  fleetOperations?: FleetPhaseFigures[];
  apiServerErrors?: number;
  kube?: KubeFigures;
}

const sec = (ms: number | undefined): string => (ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s`);
const perHost = (c: Column, of: (cpu: CpuByProcess) => number): string =>
  `${(Object.values(c.figures.cpuSecondsByPhase).reduce((a, cpu) => a + of(cpu), 0) / c.hosts).toFixed(2)} s`;

function columns(file: string, r: BenchResult | FloorOnlyResult): Column[] {
  const name = (extra = ''): string => `${r.commit}${r.options.temporal === 'postgres' ? ', postgres' : ''}${extra} (${basename(file)})`;
  // The sentinel is the workers' (a floor has none): named on the metalflow columns only.
  const tag = name(r.options.powerSentinelSeconds ? `, sentinel ${r.options.powerSentinelSeconds} s` : '');
  if (isFloorOnly(r)) return [{ label: `floor (--driver floor) @ ${name()}`, figures: r.floor, hosts: r.options.hosts }];
  const out: Column[] = [
    {
      label: `${r.options.driver === 'fleet' ? 'fleet' : r.options.driver === 'k8s' ? 'BareMetalHosts (k8s)' : 'per-host API'} @ ${tag}`,
      figures: r.metalflow,
      hosts: r.options.hosts,
      temporal: r.metalflow.temporal,
      fleetOperations: r.metalflow.fleetOperations,
      apiServerErrors: r.metalflow.apiServerErrors.count,
      kube: r.metalflow.kube,
    },
  ];
  if (r.fleet) out.push({ label: `fleet (--fleet) @ ${tag}`, figures: r.fleet, hosts: r.options.hosts, temporal: r.fleet.temporal, fleetOperations: r.fleet.operations });
  if (r.floor) out.push({ label: `floor @ ${name()}`, figures: r.floor, hosts: r.options.hosts });
  return out;
}

/** The table for results already read (file name -> result), in the order given. */
export function compareResults(runs: { file: string; result: BenchResult | FloorOnlyResult }[]): string {
  if (runs.length === 0) throw new Error('compare: name at least one result file (bench/results/*.json)');
  const cols = runs.flatMap(({ file, result }) => columns(file, result));
  const phases = [...new Set(runs.flatMap(({ result }) => result.options.phases))] as Phase[];
  const out: string[] = [];
  const shapes = new Set(runs.map(({ result: r }) => `${r.options.hosts} hosts, concurrency ${r.options.concurrency}${r.options.redfish ? ', redfish' : ''}${r.options.agent ? ', agent path' : ''}`));
  out.push(`runs: ${runs.map(({ file, result: r }) => `${basename(file)}: commit ${r.commit}, ${r.date}, ${r.options.hosts} hosts, concurrency ${r.options.concurrency}`).join('; ')}`);
  if (shapes.size > 1) out.push(`NOTE: the runs differ in shape (${[...shapes].join(' / ')}): their times do not compare`);
  if (new Set(runs.map(({ result }) => result.commit)).size > 1) out.push('NOTE: the runs are of different commits: say what changed between them beside the figures');
  out.push('');
  const floor = cols.find((c) => c.temporal === undefined);
  const rows: [string, (c: Column) => string][] = [
    ...phases.map((p): [string, (c: Column) => string] => [
      PHASE_LABEL[p],
      (c) => {
        const t = c.figures.phaseMs[p];
        const f = floor?.figures.phaseMs[p];
        return c !== floor && t !== undefined && f ? `${sec(t)} (${(t / f).toFixed(2)})` : sec(t);
      },
    ]),
    ['whole lifecycle (first create -> all gone)', (c) => sec(c.figures.cumulativeMs[phases.at(-1)!])],
    ['Ironic requests per host', (c) => c.figures.ironicRequestsPerHost.toFixed(1)],
    ['Temporal CPU per host lifecycle', (c) => (c.temporal ? perHost(c, (cpu) => cpu.temporal) : '-')],
    ['orchestration CPU per host lifecycle', (c) => (c.temporal ? perHost(c, orchestrationCpu) : '-')],
    ...(cols.some((c) => c.kube)
      ? ([
          ['  of which controller + kube-apiserver + etcd', (c) => (c.kube ? perHost(c, (cpu) => (cpu.controller ?? 0) + (cpu.apiserver ?? 0) + (cpu.etcd ?? 0)) : '-')],
          ['kube-apiserver requests per host', (c) => c.kube?.requestsPerHost.toFixed(1) ?? '-'],
          ['status writes; Events per host', (c) => (c.kube ? `${c.kube.statusWritesPerHost.toFixed(1)}; ${c.kube.eventsPerHost.toFixed(1)}` : '-')],
        ] satisfies [string, (c: Column) => string][])
      : []),
    ['Ironic CPU per host lifecycle', (c) => perHost(c, (cpu) => cpu.ironic)],
    ['history events per host lifecycle (p50)', (c) => String(c.temporal?.historyEventsPerHost?.p50 ?? '-')],
    ['API call -> first activity p99 (create)', (c) => (c.temporal?.apiToFirstActivityMs.create.fromRequest ? `${Math.round(c.temporal.apiToFirstActivityMs.create.fromRequest.p99)} ms` : '-')],
    ['failed operations; API 5xx (retried)', (c) => (c.temporal ? `${c.temporal.failedOperations}; ${c.apiServerErrors ?? 0}` : '-')],
    ...phases
      .filter((p) => cols.some((c) => c.fleetOperations?.some((o) => o.phase === p)))
      .map((p): [string, (c: Column) => string] => [
        `fleet POST -> first host asked / first operation, ${PHASE_LABEL[p]}`,
        (c) => {
          const op = c.fleetOperations?.find((o) => o.phase === p);
          return op ? `${op.startToFirstAskMs ?? '-'} / ${op.startToFirstOperationMs ?? '-'} ms` : '-';
        },
      ]),
  ];
  const width = Math.max(...rows.map(([name]) => name.length)) + 2;
  cols.forEach((c, i) => out.push(`  [${i + 1}] ${c.label}`));
  out.push(`  ${''.padEnd(width)}${cols.map((_, i) => `[${i + 1}]`.padStart(18)).join('')}`);
  for (const [name, cell] of rows) out.push(`  ${name.padEnd(width)}${cols.map((c) => cell(c).padStart(18)).join('')}`);
  if (floor) out.push('', `  (in parentheses: the phase's time / the floor's, [${cols.indexOf(floor) + 1}])`);
  return out.join('\n');
}

export function compareFiles(files: string[]): string {
  return compareResults(
    files.map((file) => {
      const result = JSON.parse(readFileSync(file, 'utf8')) as BenchResult | FloorOnlyResult;
      if (result.version !== 1 || !(isFloorOnly(result) ? result.floor : result.metalflow)) throw new Error(`compare: ${file} is not a benchmark result (bench/results/*.json)`);
      return { file, result };
    }),
  );
}
