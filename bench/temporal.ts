/**
 * Figures read back from Temporal after a run: every execution whose ID starts
 * with `host/<ns>/` (host runs and their operation children) from visibility,
 * with start/close times and history lengths; and the enroll and provision
 * children's histories for the first ActivityTaskStarted event.
 */
import { Client, type WorkflowExecutionInfo } from '@temporalio/client';
import { connectTemporalClient } from '../clients/temporal/connection';
import { pool, percentiles, type Percentiles } from './common';
import { inlineOperations } from './inline-operations';
import type { ApiCall } from './metalflow';

/** Temporal's default per-execution history limits (events). */
export const HISTORY_LIMIT_EVENTS = 51_200;
export const HISTORY_WARN_EVENTS = 10_240;

export interface TemporalFigures {
  executions: number;
  /** Per operation kind, closeTime - startTime of the child workflow, ms. */
  stepLatencyMs: Record<string, Percentiles | undefined>;
  /** Operations per host lifecycle by kind (mean). */
  operationsPerHost: Record<string, number>;
  failedOperations: number;
  /** All events of a host's lifecycle: its host workflow runs plus every operation child. */
  historyEventsPerHost: Percentiles | undefined;
  /** Events of the host workflow alone (all runs). */
  hostWorkflowEventsPerHost: Percentiles | undefined;
  /** Largest single run of any host workflow, and how many hosts continued as new. */
  maxHostRunEvents: number;
  hostsContinuedAsNew: number;
  /** API call sent -> first ActivityTaskStarted of the operation the call caused, ms. */
  apiToFirstActivityMs: {
    create: { fromRequest?: Percentiles; fromResponse?: Percentiles };
    setImage: { fromRequest?: Percentiles; fromResponse?: Percentiles };
  };
  /**
   * Where the create call's time goes, each segment from the previous mark, ms:
   * request sent -> host workflow started -> its first workflow task started ->
   * completed -> enroll child started -> child's first workflow task started ->
   * activity scheduled -> activity started.
   */
  createBreakdownMs: Record<string, Percentiles | undefined>;
  /**
   * The same for set image (an update of a running host, operations inside the host workflow): request
   * sent -> the first workflow task scheduled after it (the API's reads and the update reaching the
   * host) -> started -> completed -> the provision's first activity scheduled -> started.
   */
  setImageBreakdownMs?: Record<string, Percentiles | undefined>;
}

const tsMs = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): number | undefined => {
  if (!t || t.seconds === undefined || t.seconds === null) return undefined;
  return Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
};

export async function listExecutions(client: Client, namespace: string): Promise<WorkflowExecutionInfo[]> {
  const out: WorkflowExecutionInfo[] = [];
  for await (const wf of client.workflow.list({ query: `WorkflowId STARTS_WITH "host/${namespace}/"` })) out.push(wf);
  return out;
}

export async function temporalFigures(address: string, namespace: string, calls: ApiCall[], hostCount: number): Promise<TemporalFigures> {
  const connection = await connectTemporalClient({ address });
  const client = new Client({ connection });
  try {
    const all = await listExecutions(client, namespace);
    const hostPrefix = `host/${namespace}/`;
    const byHost = new Map<string, { hostEvents: number; childEvents: number; runs: number; maxRun: number }>();
    const latencies: Record<string, number[]> = {};
    const opCounts: Record<string, number> = {};
    let failedOperations = 0;
    const firstChild = new Map<string, { enroll?: string; provision?: string }>();
    /** Each host workflow's first run: it holds the create; a run after continue-as-new does not. */
    const firstRun = new Map<string, { runId: string; start: number }>();
    for (const wf of all) {
      const rest = wf.workflowId.slice(hostPrefix.length);
      const [name, op] = rest.split('/');
      if (!name) continue;
      const h = byHost.get(name) ?? { hostEvents: 0, childEvents: 0, runs: 0, maxRun: 0 };
      byHost.set(name, h);
      const events = wf.historyLength ?? 0;
      if (op === undefined) {
        h.hostEvents += events;
        h.runs += 1;
        h.maxRun = Math.max(h.maxRun, events);
        const first = firstRun.get(name);
        if (!first || wf.startTime.getTime() < first.start) firstRun.set(name, { runId: wf.runId, start: wf.startTime.getTime() });
        continue;
      }
      h.childEvents += events;
      const m = /^(\d+)-(\w+)$/.exec(op);
      if (!m) continue;
      const kind = m[2]!;
      opCounts[kind] = (opCounts[kind] ?? 0) + 1;
      if (wf.status.name !== 'COMPLETED') failedOperations += 1;
      else if (wf.closeTime) (latencies[kind] ??= []).push(wf.closeTime.getTime() - wf.startTime.getTime());
      const f = firstChild.get(name) ?? {};
      if (kind === 'enroll' && (!f.enroll || Number(m[1]) < Number(/\/(\d+)-/.exec(f.enroll)?.[1]))) f.enroll = wf.workflowId;
      if (kind === 'provision' && (!f.provision || Number(m[1]) < Number(/\/(\d+)-/.exec(f.provision)?.[1]))) f.provision = wf.workflowId;
      firstChild.set(name, f);
    }

    type Ev = { eventTime?: unknown; [k: string]: unknown };
    const events = async (workflowId: string, runId?: string): Promise<Ev[]> =>
      ((await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? []) as unknown as Ev[];
    const timeOf = (evs: Ev[], attr: string): number | undefined => tsMs(evs.find((e) => e[attr])?.eventTime as never);
    /** The host run's first activity labelled `<seq>-<kind>` (operations-inline): when it was scheduled and started. */
    const labelled = (evs: Ev[], kind: string): { scheduled?: number; started?: number } => {
      const ours = new Map<string, number | undefined>();
      for (const e of evs as unknown as { eventId?: unknown; eventTime?: unknown; userMetadata?: { summary?: { data?: Uint8Array | null } | null } | null; activityTaskScheduledEventAttributes?: unknown; activityTaskStartedEventAttributes?: { scheduledEventId?: unknown } | null }[]) {
        const summary = e.activityTaskScheduledEventAttributes ? e.userMetadata?.summary?.data : undefined;
        if (summary && new RegExp(`^"\\d+-${kind}:`).test(Buffer.from(summary).toString())) ours.set(String(e.eventId), tsMs(e.eventTime as never));
        const started = e.activityTaskStartedEventAttributes;
        if (started && ours.has(String(started.scheduledEventId))) return { scheduled: ours.get(String(started.scheduledEventId)), started: tsMs(e.eventTime as never) };
      }
      return {};
    };
    /** The first activity started: a child's first, or (operations-inline) the host's first run's first of that operation. */
    const firstActivity = async (workflowId: string, inlineKind?: string): Promise<number | undefined> =>
      inlineKind
        ? labelled(await events(workflowId, firstRun.get(workflowId.slice(hostPrefix.length))?.runId), inlineKind).started
        : timeOf(await events(workflowId), 'activityTaskStartedEventAttributes');
    // Operations as children, or (operations-inline) inside the host workflow: no child steps between.
    const childSegments = ['sent->hostStarted', 'hostStarted->wftStarted', 'wftStarted->wftCompleted', 'wftCompleted->childStarted', 'childStarted->childWftStarted', 'childWftStarted->activityScheduled', 'activityScheduled->activityStarted'];
    const inlineSegments = ['sent->hostStarted', 'hostStarted->wftStarted', 'wftStarted->wftCompleted', 'wftCompleted->activityScheduled', 'activityScheduled->activityStarted'];
    const breakdown: Record<string, number[]> = {};
    const breakdownOf = async (host: string, enrollId: string | undefined, call: ApiCall): Promise<void> => {
      const hostEvs = await events(`${hostPrefix}${host}`, firstRun.get(host)?.runId).catch(() => [] as Ev[]);
      const hostMarks = [
        call.sentAt,
        timeOf(hostEvs, 'workflowExecutionStartedEventAttributes'),
        timeOf(hostEvs, 'workflowTaskStartedEventAttributes'),
        timeOf(hostEvs, 'workflowTaskCompletedEventAttributes'),
      ];
      let marks: (number | undefined)[];
      let segments: string[];
      if (enrollId) {
        const child = await events(enrollId);
        segments = childSegments;
        marks = [
          ...hostMarks,
          timeOf(child, 'workflowExecutionStartedEventAttributes'),
          timeOf(child, 'workflowTaskStartedEventAttributes'),
          timeOf(child, 'activityTaskScheduledEventAttributes'),
          timeOf(child, 'activityTaskStartedEventAttributes'),
        ];
      } else {
        const first = labelled(hostEvs, 'enroll');
        segments = inlineSegments;
        marks = [...hostMarks, first.scheduled, first.started];
      }
      if (marks.some((m) => m === undefined)) return;
      for (let i = 0; i < segments.length; i++) (breakdown[segments[i]!] ??= []).push(marks[i + 1]! - marks[i]!);
    };
    const fromReq: Record<'create' | 'setImage', number[]> = { create: [], setImage: [] };
    const fromRes: Record<'create' | 'setImage', number[]> = { create: [], setImage: [] };
    const callOf = (host: string, phase: ApiCall['phase']): ApiCall | undefined => calls.find((c) => c.host === host && c.phase === phase);
    const jobs: { host: string; kind: 'create' | 'setImage'; wf: string; call: ApiCall; inline?: string }[] = [];
    for (const [host, f] of firstChild) {
      const create = callOf(host, 'available');
      const image = callOf(host, 'provisioned');
      if (f.enroll && create) jobs.push({ host, kind: 'create', wf: f.enroll, call: create });
      if (f.provision && image) jobs.push({ host, kind: 'setImage', wf: f.provision, call: image });
    }
    for (const host of firstRun.keys()) {
      if (firstChild.has(host)) continue;
      const create = callOf(host, 'available');
      const image = callOf(host, 'provisioned');
      if (create) jobs.push({ host, kind: 'create', wf: `${hostPrefix}${host}`, call: create, inline: 'enroll' });
      if (image) jobs.push({ host, kind: 'setImage', wf: `${hostPrefix}${host}`, call: image, inline: 'provision' });
    }
    const sample = jobs.filter((j) => j.kind === 'create').slice(0, 200);
    await pool(sample, 8, (j) => breakdownOf(j.host, j.inline ? undefined : j.wf, j.call));
    const imageSegments = ['sent->wftScheduled', 'wftScheduled->wftStarted', 'wftStarted->wftCompleted', 'wftCompleted->activityScheduled', 'activityScheduled->activityStarted'];
    const imageBreakdown: Record<string, number[]> = {};
    /** The run that holds the host's provision (a host may have continued as new since its create): its first workflow task after the call. */
    const imageBreakdownOf = async (host: string, call: ApiCall): Promise<void> => {
      const runs = all.filter((wf) => wf.workflowId === `${hostPrefix}${host}`).sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
      for (const run of runs) {
        const evs = await events(run.workflowId, run.runId).catch(() => [] as Ev[]);
        const first = labelled(evs, 'provision');
        if (first.scheduled === undefined || first.started === undefined) continue;
        const after = evs.filter((e) => (tsMs(e.eventTime as never) ?? 0) >= call.sentAt);
        const marks = [
          call.sentAt,
          timeOf(after, 'workflowTaskScheduledEventAttributes'),
          timeOf(after, 'workflowTaskStartedEventAttributes'),
          timeOf(after, 'workflowTaskCompletedEventAttributes'),
          first.scheduled,
          first.started,
        ];
        if (marks.some((m) => m === undefined)) return;
        for (let i = 0; i < imageSegments.length; i++) (imageBreakdown[imageSegments[i]!] ??= []).push(marks[i + 1]! - marks[i]!);
        return;
      }
    };
    const imageSample = jobs.filter((j) => j.kind === 'setImage' && j.inline).slice(0, 200);
    await pool(imageSample, 8, (j) => imageBreakdownOf(j.host, j.call));
    await pool(jobs, 8, async (j) => {
      const t = await firstActivity(j.wf, j.inline);
      if (t === undefined) return;
      fromReq[j.kind].push(t - j.call.sentAt);
      fromRes[j.kind].push(t - j.call.respondedAt);
    });

    // Hosts whose operations ran inside their workflow (operations-inline): from each deleted host's final view.
    const completed = new Map(all.filter((wf) => !wf.workflowId.slice(hostPrefix.length).includes('/') && wf.status.name === 'COMPLETED').map((wf) => [wf.workflowId.slice(hostPrefix.length), wf.runId]));
    const inline = await inlineOperations(client, hostPrefix, completed);
    for (const [k, n] of Object.entries(inline.counts)) opCounts[k] = (opCounts[k] ?? 0) + n;
    for (const [k, v] of Object.entries(inline.latenciesMs)) (latencies[k] ??= []).push(...v);
    failedOperations += inline.failed;

    const hosts = [...byHost.values()];
    const stepLatencyMs: Record<string, Percentiles | undefined> = {};
    for (const [k, v] of Object.entries(latencies)) stepLatencyMs[k] = percentiles(v);
    const operationsPerHost: Record<string, number> = {};
    for (const [k, v] of Object.entries(opCounts)) operationsPerHost[k] = v / Math.max(1, hostCount);
    return {
      executions: all.length,
      stepLatencyMs,
      operationsPerHost,
      failedOperations,
      historyEventsPerHost: percentiles(hosts.map((h) => h.hostEvents + h.childEvents)),
      hostWorkflowEventsPerHost: percentiles(hosts.map((h) => h.hostEvents)),
      maxHostRunEvents: Math.max(0, ...hosts.map((h) => h.maxRun)),
      hostsContinuedAsNew: hosts.filter((h) => h.runs > 1).length,
      apiToFirstActivityMs: {
        create: { fromRequest: percentiles(fromReq.create), fromResponse: percentiles(fromRes.create) },
        setImage: { fromRequest: percentiles(fromReq.setImage), fromResponse: percentiles(fromRes.setImage) },
      },
      createBreakdownMs: Object.fromEntries(Object.entries(breakdown).map(([k, v]) => [k, percentiles(v)])),
      ...(imageSample.length > 0 ? { setImageBreakdownMs: Object.fromEntries(Object.entries(imageBreakdown).map(([k, v]) => [k, percentiles(v)])) } : {}),
    };
  } finally {
    await connection.close();
  }
}
