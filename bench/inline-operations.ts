/**
 * Operations that ran inside host workflows (patch operations-inline) have
 * no child workflow to list: their kinds, outcomes and times are in each
 * deleted host's final view (the workflow's result), which the benchmark
 * reads instead.
 */
import type { Client } from '@temporalio/client';
import type { HostView } from '../contracts/host';

export interface InlineOperations {
  counts: Record<string, number>;
  latenciesMs: Record<string, number[]>;
  failed: number;
  /** Per host, when its first enroll and first provision started (ms), for API call -> first activity. */
  firstStarts: Map<string, { enroll?: number; provision?: number }>;
}

/** `hosts`: host name → the workflow run that completed (deleted). */
export async function inlineOperations(client: Client, prefix: string, hosts: Map<string, string>): Promise<InlineOperations> {
  const out: InlineOperations = { counts: {}, latenciesMs: {}, failed: 0, firstStarts: new Map() };
  for (const [name, runId] of hosts) {
    const view = (await client.workflow.getHandle(`${prefix}${name}`, runId).result().catch(() => undefined)) as HostView | undefined;
    for (const op of view?.operations ?? []) {
      if (!op.inline) continue;
      out.counts[op.kind] = (out.counts[op.kind] ?? 0) + 1;
      if (op.outcome === 'failed') out.failed += 1;
      else if (op.outcome === 'succeeded' && op.endedAt) (out.latenciesMs[op.kind] ??= []).push(Date.parse(op.endedAt) - Date.parse(op.startedAt));
      const first = out.firstStarts.get(name) ?? {};
      if (op.kind === 'enroll' && first.enroll === undefined) first.enroll = Date.parse(op.startedAt);
      if (op.kind === 'provision' && first.provision === undefined) first.provision = Date.parse(op.startedAt);
      out.firstStarts.set(name, first);
    }
  }
  return out;
}
