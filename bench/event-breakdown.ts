/**
 * Where a host lifecycle's history events come from: every execution whose ID
 * starts with `host/<ns>/` (the host workflow's runs and its operation
 * children), its events counted by type, and by cause: an activity's three
 * events under its name, a local activity's marker under its name, a signal
 * or an update under its own, the workflow tasks apart; per host on average.
 * A benchmark run prints the causes for a sample of its hosts; against a
 * stack a bench left up (`--keep-stack`):
 *   node --import tsx bench/event-breakdown.ts <temporal address> <bench namespace>
 */
import { Client } from '@temporalio/client';
import { connectTemporalClient } from '../clients/temporal/connection';
import { pool } from './common';
import { listExecutions } from './temporal';

export interface EventBreakdown {
  hosts: number;
  /** Mean events per host by source (`host` or the operation kind) and event type. */
  perHost: Record<string, Record<string, number>>;
  /** Mean events per host by cause (`activity syncNodeSettings`, `signal powerChanged`, `workflow task`, …). */
  byCause: Record<string, number>;
  /**
   * Mean workflow tasks per host by what woke them: the last event from outside a task before it was scheduled (an
   * activity's completion, a timer, a signal, the start), `message` when none came (an update: delivered with the
   * task it wakes, it records its events after it), `retry` for a task scheduled again after one failed or timed out.
   */
  taskWakes: Record<string, number>;
}

type Ev = Record<string, unknown> & { eventId?: unknown };

/** The event's attributes field (`activityTaskScheduledEventAttributes`, …). */
const attributesKey = (e: Ev): string | undefined => Object.keys(e).find((k) => k.endsWith('EventAttributes') && e[k]);
const typeName = (e: Ev): string => attributesKey(e)?.replace(/EventAttributes$/, '') ?? 'unknown';

/** A local activity's marker names its activity in its data (sdk-core's marker payload). */
function markerCause(attrs: { markerName?: string; details?: Record<string, { payloads?: { data?: Uint8Array | null }[] | null }> | null }): string {
  const data = attrs.details?.data?.payloads?.[0]?.data;
  if (data) {
    try {
      const parsed = JSON.parse(Buffer.from(data).toString()) as { activity_type?: string; activityType?: string };
      const type = parsed.activity_type ?? parsed.activityType;
      if (type) return `local activity ${type}`;
    } catch {
      // not JSON: named by the marker alone
    }
  }
  return `marker ${attrs.markerName ?? '?'}`;
}

/** What each event of one history is there for. */
export function causesOf(events: Ev[]): Record<string, number> {
  const out: Record<string, number> = {};
  const add = (k: string): void => {
    out[k] = (out[k] ?? 0) + 1;
  };
  const activities = new Map<string, string>();
  for (const e of events) {
    const key = attributesKey(e);
    const t = typeName(e);
    const attrs = (key ? e[key] : undefined) as Record<string, any> | undefined;
    if (t.startsWith('workflowTask')) add('workflow task');
    else if (t === 'activityTaskScheduled') {
      const name = `activity ${attrs?.activityType?.name ?? '?'}`;
      activities.set(String(e.eventId), name);
      add(name);
    } else if (t.startsWith('activityTask')) add(activities.get(String(attrs?.scheduledEventId)) ?? 'activity ?');
    else if (t === 'markerRecorded') add(markerCause(attrs ?? {}));
    else if (t === 'workflowExecutionSignaled') add(`signal ${attrs?.signalName ?? '?'}`);
    else if (t.startsWith('workflowExecutionUpdate')) add(t === 'workflowExecutionUpdateAccepted' ? `update ${attrs?.acceptedRequest?.input?.name ?? '?'}` : 'update completed');
    else if (t.startsWith('timer')) add('timer');
    else if (t === 'upsertWorkflowSearchAttributes') add('search attributes');
    else add(t);
  }
  return out;
}

/** Events that come from outside a workflow task (what can wake one); the rest are its commands' records. */
const EXTERNAL = /^(activityTask(Completed|Failed|TimedOut|Canceled)|timerFired|workflowExecution(Started|Signaled|CancelRequested)|childWorkflowExecution(Started|Completed|Failed|Canceled|TimedOut|Terminated)|startChildWorkflowExecutionFailed|externalWorkflowExecution(Signaled|CancelRequested)|signalExternalWorkflowExecutionFailed|workflowTask(Failed|TimedOut))$/;

/** What woke each workflow task of one history (EventBreakdown.taskWakes). */
export function taskWakesOf(events: Ev[]): Record<string, number> {
  const out: Record<string, number> = {};
  const activities = new Map<string, string>();
  /** The last event from outside since the last workflow task completed. */
  let woke: Ev | undefined;
  for (const e of events) {
    const key = attributesKey(e);
    const attrs = (key ? e[key] : undefined) as Record<string, any> | undefined;
    const t = typeName(e);
    if (t === 'activityTaskScheduled') activities.set(String(e.eventId), `activity ${attrs?.activityType?.name ?? '?'}`);
    if (t === 'workflowTaskScheduled') {
      const w = woke ? typeName(woke) : undefined;
      const wattrs = woke && attributesKey(woke) ? (woke[attributesKey(woke)!] as Record<string, any>) : undefined;
      const cause = !w
        ? 'message'
        : w.startsWith('activityTask')
          ? (activities.get(String(wattrs?.scheduledEventId)) ?? 'activity ?')
          : w === 'workflowTaskFailed' || w === 'workflowTaskTimedOut'
            ? 'retry'
            : w === 'workflowExecutionSignaled'
              ? `signal ${wattrs?.signalName ?? '?'}`
              : w === 'timerFired'
                ? 'timer'
                : w;
      out[cause] = (out[cause] ?? 0) + 1;
      woke = undefined;
    } else if (t === 'workflowTaskCompleted') woke = undefined;
    else if (EXTERNAL.test(t)) woke = e;
  }
  return out;
}

export async function eventBreakdown(address: string, namespace: string, maxHosts = Infinity): Promise<EventBreakdown> {
  const connection = await connectTemporalClient({ address });
  const client = new Client({ connection });
  try {
    const all = await listExecutions(client, namespace);
    const hosts = new Set<string>();
    for (const wf of all) {
      const name = wf.workflowId.slice(`host/${namespace}/`.length).split('/')[0];
      if (name && hosts.size < maxHosts) hosts.add(name);
    }
    const counts: Record<string, Record<string, number>> = {};
    const causes: Record<string, number> = {};
    const wakes: Record<string, number> = {};
    const mine = all.filter((wf) => hosts.has(wf.workflowId.slice(`host/${namespace}/`.length).split('/')[0] ?? ''));
    await pool(mine, 8, async (wf) => {
      const op = wf.workflowId.slice(`host/${namespace}/`.length).split('/')[1];
      const source = op === undefined ? 'host' : (/^\d+-(\w+)$/.exec(op)?.[1] ?? op);
      const events = ((await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory()).events ?? []) as unknown as Ev[];
      const bucket = (counts[source] ??= {});
      for (const e of events) bucket[typeName(e)] = (bucket[typeName(e)] ?? 0) + 1;
      for (const [k, v] of Object.entries(causesOf(events))) causes[k] = (causes[k] ?? 0) + v;
      for (const [k, v] of Object.entries(taskWakesOf(events))) wakes[k] = (wakes[k] ?? 0) + v;
    });
    const n = Math.max(1, hosts.size);
    const perHost = Object.fromEntries(
      Object.entries(counts).map(([src, byType]) => [src, Object.fromEntries(Object.entries(byType).map(([t, c]) => [t, c / n]))]),
    );
    const mean = (m: Record<string, number>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, v / n]));
    return { hosts: hosts.size, perHost, byCause: mean(causes), taskWakes: mean(wakes) };
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
  console.log('by cause:');
  for (const [k, c] of Object.entries(b.byCause).sort((x, y) => y[1] - x[1])) console.log(`  ${k}: ${c.toFixed(1)}`);
  console.log('workflow tasks woken by:');
  for (const [k, c] of Object.entries(b.taskWakes).sort((x, y) => y[1] - x[1])) console.log(`  ${k}: ${c.toFixed(1)}`);
  console.log(`total: ${total.toFixed(1)} events per host lifecycle (${b.hosts} hosts)`);
}
