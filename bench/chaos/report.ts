/** The chaos run's result document (bench/results/chaos-*.json) and its table on stdout. */
import { cpus, totalmem } from 'node:os';
import type { InjectedFault } from '../support/ironic-proxy';
import { percentiles } from '../common';
import type { Checks } from './checks';
import type { FaultRecord } from './faults';
import type { HostRecord } from './fleet';
import { STEPS } from './hosts';
import type { ChaosOptions } from './options';
import type { Crash } from './supervisor';

/** What the malformed-input corpus (bench/support/malformed-run.ts) found, when the run had an API to send it to. */
export interface MalformedInputs {
  sent: number;
  rejectedWithFieldError: number;
  changedAnything: number;
  /** Cases answered otherwise than expected, or that changed something. */
  failures: { name: string; problem: string }[];
}

export interface ChaosResult {
  version: 1;
  kind: 'chaos';
  date: string;
  commit: string;
  seed: number;
  machine: { cpus: number; cpuModel: string; memGiB: number; node: string };
  options: Omit<ChaosOptions, 'log'>;
  durationMs: number;
  hosts: { total: number; api: number; k8s: number; direct: number };
  faults: FaultRecord[];
  ironicProxy: { requests: number; injected: Partial<Record<InjectedFault, number>> };
  bmcProxies: { requests: number; unanswered: number };
  /** API requests sent again after a 5xx or no answer. */
  apiRetries: number;
  crashes: Crash[];
  malformedInputs?: MalformedInputs;
  checks: Checks;
  passed: boolean;
  /** Seconds from asking to reaching each step, over the hosts that reached it. */
  stepSeconds: Record<string, { p50: number; max: number; n: number } | undefined>;
  hostRecords: HostRecord[];
}

export function machine(): ChaosResult['machine'] {
  return { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memGiB: Math.round(totalmem() / 2 ** 30), node: process.versions.node };
}

export function stepSeconds(records: HostRecord[]): ChaosResult['stepSeconds'] {
  const out: ChaosResult['stepSeconds'] = {};
  for (const step of STEPS) {
    const p = percentiles(records.flatMap((r) => (r.steps[step]?.reachedAt ? [(r.steps[step]!.reachedAt! - r.steps[step]!.requestedAt) / 1000] : [])));
    out[step] = p && { p50: p.p50, max: p.max, n: p.n };
  }
  return out;
}

const row = (label: string, value: string | number, expected: string, note = ''): string =>
  `${label.padEnd(58)} ${String(value).padStart(6)}   ${expected.padEnd(6)}${note ? `  ${note}` : ''}`;

/** The checks' names as the issue gives them; a failure lists the hosts behind it. */
export function formatTable(r: ChaosResult): string {
  const c = r.checks;
  const lines: string[] = [];
  const mins = Math.floor(r.durationMs / 60_000);
  lines.push(
    `chaos run, seed ${r.seed}: ${r.hosts.total} hosts (${r.hosts.api} through the API, ${r.hosts.k8s} through the CRD shim; ${r.hosts.direct} of them direct live-ISO on Redfish), ` +
      `${mins} min ${Math.round((r.durationMs % 60_000) / 1000)} s, commit ${r.commit}`,
    '',
    'faults injected:',
  );
  for (const f of r.faults) lines.push(`  ${f.kind.padEnd(16)} at ${f.at.toFixed(2)}: ${f.error ? `FAILED: ${f.error}` : f.detail}`);
  const inj = r.ironicProxy.injected;
  const no = (inj['no answer, forwarded'] ?? 0) + (inj['no answer, not forwarded'] ?? 0);
  const status = Object.entries(inj).filter(([k]) => k.startsWith('status')).map(([k, v]) => `${v} × ${k.slice(7)}`);
  lines.push(
    !r.options.faults.includes('ironic-proxy') ? `  ${'ironic-proxy'.padEnd(16)} off` :
    `  ${'ironic-proxy'.padEnd(16)} ${Object.values(inj).reduce((a: number, b) => a + (b ?? 0), 0)} of ${r.ironicProxy.requests} worker requests to Ironic: ` +
      `${status.join(', ') || 'no error answers'}; ${no} unanswered (${inj['no answer, forwarded'] ?? 0} after Ironic acted)`,
    `  BMC proxies: ${r.bmcProxies.unanswered} of ${r.bmcProxies.requests} Redfish requests unanswered`,
    '',
    row('check', 'found', 'wanted'),
    row('hosts lost', c.lost.length, '0'),
    row('hosts stuck', c.stuck.length, '0'),
    row('deploys sent twice (per node, at the proxy)', c.deploys.twice.length, '0', `${c.deploys.once} hosts exactly once${c.deploys.retriedAfterFailure.length ? `, ${c.deploys.retriedAfterFailure.length} deployed again after Ironic failed the first` : ''}`),
    row('deploys missing (provisioned without one)', c.deploys.missing.length, '0'),
    row('reboots sent twice (power-off requests per node)', c.reboots.twice.length, '0', `${c.reboots.once} hosts exactly once`),
    row('reboots missing', c.reboots.missing.length, '0', c.reboots.servedByNewNode.length ? `${c.reboots.servedByNewNode.length} served by powering on the node registered again after a loss` : ''),
    row('provisioned hosts re-provisioned after the empty-DB restart', c.reprovisioned.length, '0', `of ${c.activeAtWipe} provisioned then${c.redeployedMidProvisioning.length ? `; ${c.redeployedMidProvisioning.length} caught mid-provisioning deployed again` : ''}`),
    row('secrets in decoded histories and logs', c.secrets.length, '0'),
  );
  if (r.malformedInputs) {
    const m = r.malformedInputs;
    lines.push(`malformed inputs: ${m.sent} sent, ${m.rejectedWithFieldError} rejected with a field error, ${m.changedAnything} changed anything`);
    for (const f of m.failures.slice(0, 10)) lines.push(`  ${f.name}: ${f.problem.slice(0, 300)}`);
  }
  lines.push(`processes that exited by themselves (restarted): ${r.crashes.length}${r.crashes.length ? ` (${r.crashes.map((x) => `${x.process} ${x.exit}`).join(', ')})` : ''}`);
  lines.push(`API requests sent again after a 5xx or no answer: ${r.apiRetries}`);
  const steps = STEPS.map((s) => `${s} ${r.stepSeconds[s] ? `${r.stepSeconds[s]!.p50.toFixed(0)}/${r.stepSeconds[s]!.max.toFixed(0)}` : '-'}`);
  lines.push(`seconds per step, p50/max: ${steps.join(', ')}`);
  const details: [string, string[]][] = [
    ['lost', c.lost],
    ['stuck', c.stuck],
    ['deploys twice', c.deploys.twice],
    ['deploys missing', c.deploys.missing],
    ['reboots twice', c.reboots.twice],
    ['reboots missing', c.reboots.missing],
    ['re-provisioned', c.reprovisioned],
    ['secrets', c.secrets],
  ];
  for (const [label, items] of details) {
    if (items.length === 0) continue;
    lines.push('', `${label}:`);
    for (const item of items.slice(0, 20)) lines.push(`  ${item}`);
    if (items.length > 20) lines.push(`  … and ${items.length - 20} more (see the JSON)`);
  }
  const missed = r.faults.filter((f) => f.startedAt === undefined || f.error);
  if (missed.length > 0) lines.push('', `faults not injected: ${missed.map((f) => f.kind).join(', ')}`);
  lines.push('', r.passed ? `PASSED (seed ${r.seed})` : `FAILED (reproduce with: npm run chaos -- --seed ${r.seed} …)`);
  return lines.join('\n');
}


