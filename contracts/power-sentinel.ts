/**
 * The power sentinel's contract (workflows/power/power-sentinel.ts): one per site, started by the worker that
 * reaches the site's Ironic (the central worker for the default site, `npm run worker -- --site NAME` for a
 * configured one).
 */

export interface PowerSentinelInput {
  /** Seconds between two lists of Ironic's nodes. */
  intervalSeconds: number;
  /** How long one activity attempt watches (3600 unless set; tests shorten it). */
  watchSeconds?: number;
  /** Attempts per run before it continues as new (24 unless set). */
  watchesPerRun?: number;
  /** Only hosts in this namespace; unset: every host with an Ironic node. */
  namespace?: string;
  /**
   * The site whose Ironic the sentinel lists and whose hosts it tells (docs/sites.md): its watch runs on the
   * site's task queue, where the site worker reaches that Ironic. Unset: the default site, on the workflow's queue.
   */
  site?: string;
}

/** `power-sentinel/<task queue>`: the central worker's queue for the default site, `site/<name>` for a configured one. */
export const powerSentinelWorkflowId = (taskQueue: string): string => `power-sentinel/${taskQueue}`;

export type PowerSentinelWorkflow = (input: PowerSentinelInput) => Promise<void>;
