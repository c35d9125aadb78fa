/**
 * Where a host lifecycle's history events come from: every execution whose ID
 * starts with `host/<ns>/` (the host workflow's runs and its operation
 * children), its events counted by type, per host on average. Run against a
 * stack a bench left up (`--keep-stack`):
 *   node --import tsx bench/event-breakdown.ts <temporal address> <bench namespace>
 */
import { Client } from '@temporalio/client';
import { connectTemporalClient } from '../clients/temporal/connection';
import { listExecutions } from './temporal';

export interface EventBreakdown {
  hosts: number;
  /** Mean events per host by source (`host` or the operation kind) and event type. */
  perHost: Record<string, Record<string, number>>;
}

const typeName = (e: Record<string, unknown>): string =>
  Object.keys(e).find((k) => k.endsWith('EventAttributes') && e[k])?.replace(/EventAttributes$/, '') ?? 'unknown';

export async function eventBreakdown(address: string, namespace: string): Promise<EventBreakdown> {
  const connection = await connectTemporalClient({ address });
  const client = new Client({ connection });
  try {
    const all = await listExecutions(client, namespace);
    const hosts = new Set<string>();
    const counts: Record<string, Record<string, number>> = {};
    for (const wf of all) {
      const [name, op] = wf.workflowId.slice(`host/${namespace}/`.length).split('/');
      if (!name) continue;
      hosts.add(name);
      const source = op === undefined ? 'host' : (/^\d+-(\w+)$/.exec(op)?.[1] ?? op);
      const history = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
      const bucket = (counts[source] ??= {});
      for (const e of history.events ?? []) {
        const t = typeName(e as unknown as Record<string, unknown>);
        bucket[t] = (bucket[t] ?? 0) + 1;
      }
    }
    const n = Math.max(1, hosts.size);
    const perHost = Object.fromEntries(
      Object.entries(counts).map(([src, byType]) => [src, Object.fromEntries(Object.entries(byType).map(([t, c]) => [t, c / n]))]),
    );
    return { hosts: hosts.size, perHost };
  } finally {
    await connection.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [address, namespace] = process.argv.slice(2);
  if (!address || !namespace) throw new Error('usage: event-breakdown.ts <temporal address> <bench namespace>');
  const b = await eventBreakdown(address, namespace);
  let total = 0;
  for (const [src, byType] of Object.entries(b.perHost)) {
    const sum = Object.values(byType).reduce((a, c) => a + c, 0);
    total += sum;
    console.log(`${src}: ${sum.toFixed(1)} per host`);
    for (const [t, c] of Object.entries(byType).sort((x, y) => y[1] - x[1])) console.log(`  ${t}: ${c.toFixed(1)}`);
  }
  console.log(`total: ${total.toFixed(1)} events per host lifecycle (${b.hosts} hosts)`);
}
