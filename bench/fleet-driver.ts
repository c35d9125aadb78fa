/**
 * `npm run bench -- --fleet`: the lifecycle driven by fleet operations (issue
 * 11's benchmark) instead of one API call per host. Hosts are still created one
 * PUT each (a fleet acts on hosts that exist; it does not enroll them); then
 * one fleet operation per phase (`provision`, `deprovision`, `delete`) over the
 * run's namespace, with `maxConcurrent` = the run's concurrency. A host has
 * reached a phase on the same looks as the per-host driver's (one visibility
 * list per tick, bench/host-look.ts), so the two drivers' phase times compare; the fleet must end
 * `completed` with every selected host `succeeded`.
 */
import { Client } from '@temporalio/client';
import { connectTemporalClient } from '../clients/temporal/connection';
import type { FleetProgress } from '../contracts/fleet';
import { IMAGE, pool, type BenchHost, type Phase } from './common';
import { MetalflowDriver } from './metalflow';

/** One phase's fleet operation, as the benchmark saw it. */
export interface FleetPhaseFigures {
  phase: Phase;
  name: string;
  maxConcurrent: number;
  /** Fleet workflow runs (continue-as-new) and the last run's history length. */
  runs: number;
  lastRunHistoryEvents: number;
  counts: FleetProgress['counts'];
  /** POST of the fleet operation -> the fleet asked its first host (the fleet's own record). */
  startToFirstAskMs?: number;
  /** POST -> the first host's operation of that kind started (the host's record; not for deletes: the host is gone). */
  startToFirstOperationMs?: number;
  /** POST -> half of the hosts' operations had started, and all of them: how the starts spread behind the first. */
  startToMedianOperationMs?: number;
  startToLastOperationMs?: number;
}

const FLEET_OPERATION: Partial<Record<Phase, { kind: string; opKind?: string; image?: typeof IMAGE }>> = {
  provisioned: { kind: 'provision', opKind: 'provision', image: IMAGE },
  deprovisioned: { kind: 'deprovision', opKind: 'deprovision' },
  gone: { kind: 'delete' },
};

const ENDED: ReadonlySet<FleetProgress['phase']> = new Set(['completed', 'halted', 'cancelled']);

export class FleetDriver extends MetalflowDriver {
  readonly fleets: FleetPhaseFigures[] = [];

  override async runPhase(phase: Phase, hosts: BenchHost[]): Promise<void> {
    const op = FLEET_OPERATION[phase];
    if (!op) return super.runPhase(phase, hosts);
    this.startTicker();
    const name = `${this.opts.namespace}-${op.kind}`;
    const postedAt = Date.now();
    const r = await this.api.send('POST', '/v1/fleet-operations', {
      name,
      operation: { kind: op.kind, ...(op.image ? { image: op.image } : {}) },
      selector: { namespace: this.opts.namespace },
      maxConcurrent: this.opts.concurrency,
      maxFailures: 0,
      hostTimeoutSeconds: Math.ceil(this.opts.phaseTimeoutMs / 1000),
    });
    if (r.status >= 300) throw new Error(`POST /v1/fleet-operations ${name}: HTTP ${r.status} ${r.json?.message ?? ''}`);
    // Every host waits on the shared list (no per-host request while the fleet runs).
    const target = phase === 'gone' ? 'gone' : phase === 'provisioned' ? 'provisioned' : 'available';
    await pool(hosts, hosts.length, (host) => this.until(host, phase, target));
    await this.checkNoneEndedAbnormally(phase);
    const progress = await this.fleetEnded(name);
    if (progress.phase !== 'completed' || progress.counts.succeeded !== hosts.length) {
      const failures = progress.failures.slice(0, 5).map((f) => `${f.ref.name}: ${f.error}`).join('; ');
      throw new Error(`fleet ${name} ended ${progress.phase} with ${JSON.stringify(progress.counts)} (${hosts.length} hosts)${failures ? `: ${failures}` : ''}`);
    }
    const asked = progress.hosts.map((h) => (h.startedAt ? Date.parse(h.startedAt) : Infinity));
    const firstAsk = Math.min(...asked);
    const starts = op.opKind ? await this.operationStarts(hosts, op.opKind, postedAt) : [];
    this.fleets.push({
      phase,
      name,
      maxConcurrent: progress.limits.maxConcurrent,
      runs: progress.runs,
      lastRunHistoryEvents: await this.historyLength(`fleet/${name}`),
      counts: progress.counts,
      startToFirstAskMs: Number.isFinite(firstAsk) ? firstAsk - postedAt : undefined,
      startToFirstOperationMs: starts[0],
      startToMedianOperationMs: starts[Math.floor((starts.length - 1) / 2)],
      startToLastOperationMs: starts.at(-1),
    });
  }

  private async fleetEnded(name: string): Promise<FleetProgress> {
    const deadline = Date.now() + this.opts.phaseTimeoutMs;
    for (;;) {
      const r = await this.api.request('GET', `/v1/fleet-operations/${name}`);
      const progress = r.json as FleetProgress | undefined;
      if (r.status === 200 && progress && ENDED.has(progress.phase)) return progress;
      if (Date.now() > deadline) throw new Error(`fleet ${name} did not end within ${this.opts.phaseTimeoutMs / 1000} s: phase ${progress?.phase}`);
      await this.nextTick();
    }
  }

  /** After the phase (so the reads load nothing measured): each host's first operation of that kind after the POST, ms after it, in order. */
  private async operationStarts(hosts: BenchHost[], kind: string, postedAt: number): Promise<number[]> {
    const starts: number[] = [];
    await pool(hosts, 8, async (host) => {
      const r = await this.api.request('GET', this.hostPath(host));
      const ops = (r.json?.operations ?? []) as { kind: string; startedAt: string }[];
      const at = Math.min(...ops.filter((o) => o.kind === kind && Date.parse(o.startedAt) >= postedAt).map((o) => Date.parse(o.startedAt)));
      if (Number.isFinite(at)) starts.push(at - postedAt);
    });
    return starts.sort((a, b) => a - b);
  }

  private async historyLength(workflowId: string): Promise<number> {
    const connection = await connectTemporalClient({ address: this.opts.temporalAddress });
    try {
      const d = await new Client({ connection }).workflow.getHandle(workflowId).describe();
      return d.historyLength;
    } finally {
      await connection.close();
    }
  }
}
