/**
 * Each site's health as the central plane sees it (docs/sites.md, *Site
 * health*): the workers Temporal saw polling the site's task queue for
 * activities, the work waiting there, and whether the site's Ironic answers a
 * GET of its API root. Read by the API's `GET /v1/sites` and its metrics.
 *
 * The Ironic check is made from the process that asks: it says whether the
 * central plane reaches the site's Ironic, which is what an operator looking
 * at a dark site wants to know first; the site worker's own view shows in its
 * hosts' operations.
 */
import type { Client } from '@temporalio/client';
import type { SiteSecrets } from '../model/site';
import proto from '@temporalio/proto';
import type { IronicTransport } from '../clients/ironic/transport';

/** A worker that polled within this long is taken to be there: a live worker polls again as soon as a long poll (about a minute) ends. */
export const WORKER_SEEN_SECONDS = 120;

export interface SiteWorkerSeen {
  identity: string;
  lastPollAt?: string;
}

export interface SiteHealth {
  name: string;
  taskQueue: string;
  /** Where its hosts' BMC credentials are held: `central`, or `site` (its worker's own store; docs/sites.md, *Credentials*). */
  credentials: SiteSecrets;
  /** A worker polled the site's queue within WORKER_SEEN_SECONDS and its Ironic answered. */
  healthy: boolean;
  /** What is wrong, in words; empty when healthy. */
  problems: string[];
  /** Workers Temporal saw polling the site's queue for activities (it forgets one a few minutes after its last poll). */
  workers: SiteWorkerSeen[];
  /** The newest of their polls. */
  lastPollAt?: string;
  /** Activities waiting on the queue for a worker to take them; absent when the server does not report it. */
  backlog?: { tasks: number; oldestSeconds: number };
  ironic: { reachable: boolean; apiVersion?: string; error?: string; checkedAt: string };
}

export interface SiteToCheck {
  name: string;
  taskQueue: string;
  /** The sites file's `secrets`; absent: central. */
  credentials?: SiteSecrets;
  /** The site's Ironic as this process reaches it. */
  ironic: Pick<IronicTransport, 'serverVersion'>;
}

const { TaskQueueKind, TaskQueueType } = proto.temporal.api.enums.v1;

const seconds = (d: { seconds?: unknown; nanos?: number | null } | null | undefined): number => Number(d?.seconds ?? 0) + (d?.nanos ?? 0) / 1e9;
const isoOf = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): string | undefined => (t?.seconds ? new Date(seconds(t) * 1000).toISOString() : undefined);

async function queueOf(client: Client, taskQueue: string): Promise<Pick<SiteHealth, 'workers' | 'lastPollAt' | 'backlog'>> {
  const res = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    reportStats: true,
  });
  const workers = (res.pollers ?? []).map((p) => ({ identity: p.identity ?? '', ...(isoOf(p.lastAccessTime) ? { lastPollAt: isoOf(p.lastAccessTime) } : {}) }));
  const lastPollAt = workers.map((w) => w.lastPollAt).filter((t): t is string => t !== undefined).sort().at(-1);
  const stats = res.stats;
  return {
    workers,
    ...(lastPollAt ? { lastPollAt } : {}),
    ...(stats ? { backlog: { tasks: Number(stats.approximateBacklogCount ?? 0), oldestSeconds: Math.round(seconds(stats.approximateBacklogAge)) } } : {}),
  };
}

async function ironicOf(site: SiteToCheck, now: () => Date): Promise<SiteHealth['ironic']> {
  try {
    const apiVersion = await site.ironic.serverVersion();
    return { reachable: true, apiVersion, checkedAt: now().toISOString() };
  } catch (err) {
    return { reachable: false, error: err instanceof Error ? err.message : String(err), checkedAt: now().toISOString() };
  }
}

/** One site's health, its queue and its Ironic asked at once. */
export async function siteHealth(client: Client, site: SiteToCheck, now: () => Date = () => new Date()): Promise<SiteHealth> {
  const [queue, ironic] = await Promise.all([queueOf(client, site.taskQueue), ironicOf(site, now)]);
  const problems: string[] = [];
  const seenSince = now().getTime() - WORKER_SEEN_SECONDS * 1000;
  if (!queue.lastPollAt || Date.parse(queue.lastPollAt) < seenSince) {
    problems.push(
      queue.lastPollAt
        ? `no worker has polled task queue ${site.taskQueue} since ${queue.lastPollAt}`
        : `no worker polls task queue ${site.taskQueue}${site.taskQueue.startsWith('site/') ? ` (its worker: npm run worker -- --site ${site.name})` : ''}`,
    );
  }
  if (!ironic.reachable) problems.push(`its Ironic does not answer: ${ironic.error ?? 'no answer'}`);
  return { name: site.name, taskQueue: site.taskQueue, credentials: site.credentials ?? 'central', healthy: problems.length === 0, problems, ...queue, ironic };
}

/**
 * Every site's health, asked at most once per `maxAgeMs` whoever asks (the API's
 * GET and a metrics scrape share one answer): a caller polling the list does
 * not turn into a stream of requests to each site's Ironic.
 */
export class SiteHealthReader {
  private last: { at: number; value: Promise<SiteHealth[]> } | undefined;

  constructor(
    private readonly client: Client,
    private readonly sites: readonly SiteToCheck[],
    private readonly maxAgeMs = 5_000,
  ) {}

  read(): Promise<SiteHealth[]> {
    const at = Date.now();
    if (this.last && at - this.last.at < this.maxAgeMs) return this.last.value;
    const value = Promise.all(this.sites.map((s) => siteHealth(this.client, s)));
    this.last = { at, value };
    // A failed read (Temporal away) is not kept: the next caller asks again.
    value.catch(() => {
      if (this.last?.value === value) this.last = undefined;
    });
    return value;
  }
}
