/**
 * Where a host's hardware activities run (docs/sites.md): a host of a site
 * other than the default one has them run by its site's worker, on the
 * site's task queue (model/site.ts); everything else the host schedules
 * (status writes, IPAM claims, the limiter) stays on the workflow's own
 * queue. The one place that decides it is this outbound interceptor
 * (workflows/common/interceptors.ts), so no activity proxy names a queue.
 *
 * A site that does not take its work (its worker stopped, its link cut)
 * leaves the activity unstarted: the first attempt to reach it is given a
 * schedule-to-start limit, and past it the host shows `siteUnreachable` and
 * sends the same call again with no limit, to wait on the site's queue until
 * the site takes it. An activity timed out before it started never ran, so
 * sending it again cannot do its hardware action twice; and it is never sent
 * anywhere else. Waiting costs the history nothing: an unstarted activity
 * writes no event, so an outage of weeks costs what one of a minute does (a
 * call sent again at each limit cost 5 events each time, without bound).
 *
 * State lives in this module: each workflow evaluates its own copy of the
 * bundle's modules (workers/worker.ts WORKFLOW_PRELOAD_MODULES), and only
 * the host workflow sets the route.
 */
import { ActivityFailure, CancelledFailure, proxyActivities, TimeoutFailure, type ActivityInput, type Next, type WorkflowOutboundCallsInterceptor } from '@temporalio/workflow';
import { DEFAULT_SITE_WATCH_SECONDS, hostSiteQueue } from '../../model/site';

/**
 * The activities of workers/site-activities.ts that touch the site's hardware, Ironic,
 * DHCP or image cache (test/unit/sites.test.ts keeps the two lists together).
 * Not here: the IPAM claims (the management cluster's API) and the idle fence (no I/O).
 */
export const SITE_ACTIVITIES: ReadonlySet<string> = new Set([
  'adoptNode', 'applyBmcBios', 'cacheImage', 'changeNodePower', 'checkImage', 'cleanNode', 'deleteNode', 'deployNode', 'detachNode',
  'ejectBmcMedia', 'ensureNode', 'getBmcMedia', 'getBmcPower', 'holdNode', 'insertBmcMedia', 'insertConfigDrive', 'inspectBmc', 'inspectNode',
  'manageNode', 'preflightBmc', 'prepareNode', 'provideNode', 'readDhcpLease', 'readHostPower', 'releaseDhcp', 'releaseNodeHold', 'removeConfigDrive',
  'reserveDhcp', 'serviceNode', 'setBmcBootDevice', 'setBmcPower', 'setPower', 'settleNode', 'syncNodeSettings', 'undeployNode', 'updateBmcFirmware',
  'verifyImage', 'watchDhcpLease',
]);

export interface SiteUnreachable {
  site: string;
  since: string;
  reason: string;
}

interface Route {
  site: string | undefined;
  watchSeconds: number | undefined;
}

let routeOf: (() => Route) | undefined;
let unreachable: SiteUnreachable | undefined;
let onReachability: ((now: SiteUnreachable | undefined) => void) | undefined;
/** The site a move between sites addresses now (site-move.ts): its steps go to one site, then the other. */
let moveStep: string | undefined;

/**
 * Called once by the host workflow: its site, read at each activity (a site may change while the host is
 * not registered), and what to do when the site stops or starts taking its calls (the BareMetalHost's
 * condition and Event in Kubernetes mode).
 */
export function routeHostActivities(route: () => Route, reachability?: (now: SiteUnreachable | undefined) => void): void {
  routeOf = route;
  onReachability = reachability;
}

/** The site took a call again: no longer unreachable, said once. */
function reached(): void {
  if (!unreachable) return;
  unreachable = undefined;
  onReachability?.(undefined);
}

/** The site the host's hardware calls go to now; undefined for a host that names none (the default site). */
export function routedSite(): string | undefined {
  return moveStep ?? routeOf?.().site;
}

/**
 * Runs one step of a move between sites with its hardware calls sent to `site`. Only the move's operation
 * schedules site activities while it runs (the host runs one operation at a time, and no power check or
 * DHCP sync meanwhile), so the override reaches its calls alone.
 */
export async function atSite<T>(site: string, step: () => Promise<T>): Promise<T> {
  moveStep = site;
  try {
    return await step();
  } finally {
    moveStep = undefined;
  }
}

/** Set while the host's site has left a call unstarted past its limit. */
export const siteUnreachable = (): SiteUnreachable | undefined => unreachable;

const notStarted = (err: unknown): boolean =>
  err instanceof ActivityFailure && err.cause instanceof TimeoutFailure && err.cause.timeoutType === 'SCHEDULE_TO_START';

type AnyActivities = Record<string, (...args: unknown[]) => Promise<unknown>>;

export async function scheduleAtSite(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>): Promise<unknown> {
  const route = routeOf?.();
  const site = moveStep ?? route?.site;
  const queue = hostSiteQueue(site);
  if (!site || !queue || input.options.taskQueue !== undefined || !SITE_ACTIVITIES.has(input.activityType)) return next(input);
  // A caller that set its own limit (the power check) handles a site that does not answer itself.
  const watched = input.options.scheduleToStartTimeout === undefined;
  const watchSeconds = route?.watchSeconds ?? DEFAULT_SITE_WATCH_SECONDS;
  // Only the first attempt has a limit: it is what tells a dark site. Activity options are not compared on replay,
  // so a run of v0.1.0 (which sent each call again with a doubling limit) replays this loop as it was, and its
  // pending attempt, once its old limit runs out, is sent again without one.
  const limit = (attempt: number) => (watched && attempt === 0 ? { scheduleToStartTimeout: `${watchSeconds} seconds` } : {});
  const options = (attempt: number) => ({ ...input.options, taskQueue: queue, ...limit(attempt) });
  for (let attempt = 0; ; attempt++) {
    try {
      // The first attempt is this call itself (its sequence number); a later one is a new call of the same activity.
      const result = attempt === 0 ? await next({ ...input, options: options(0) }) : await proxyActivities<AnyActivities>(options(attempt))[input.activityType]!(...(input.args as unknown[]));
      reached();
      return result;
    } catch (err) {
      if (!watched || !notStarted(err)) {
        // Taken by the site's worker and failed there: the site answers. A call cancelled here (a pause, a
        // delete) says nothing of the site: a host that was waiting on a dark site still shows it so.
        if (err instanceof ActivityFailure && !notStarted(err) && !(err.cause instanceof CancelledFailure)) reached();
        throw err;
      }
      if (!unreachable) {
        unreachable = {
          site,
          since: new Date().toISOString(),
          reason: `site unreachable: no worker of site "${site}" took ${input.activityType} from task queue ${queue}; waiting for the site (its worker: npm run worker -- --site ${site})`,
        };
        onReachability?.(unreachable);
      }
    }
  }
}
