/** The power sentinel's contract (workflows/power/power-sentinel.ts): one per task queue, started by the worker. */

export interface PowerSentinelInput {
  /** Seconds between two lists of Ironic's nodes. */
  intervalSeconds: number;
  /** How long one activity attempt watches (3600 unless set; tests shorten it). */
  watchSeconds?: number;
  /** Attempts per run before it continues as new (24 unless set). */
  watchesPerRun?: number;
  /** Only hosts in this namespace; unset: every host with an Ironic node. */
  namespace?: string;
}

export const powerSentinelWorkflowId = (taskQueue: string): string => `power-sentinel/${taskQueue}`;

export type PowerSentinelWorkflow = (input: PowerSentinelInput) => Promise<void>;
