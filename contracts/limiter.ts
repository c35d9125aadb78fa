/**
 * The provisioning limit's contract (docs/kubernetes.md, *Provisioning limit*): one limiter
 * workflow per task queue hands out permits to the host workflows, first come
 * first served, as Metal3's PROVISIONING_LIMIT bounds how many hosts are busy
 * with Ironic's ramdisk at once. Imported by the limiter, the hosts and the
 * activity that starts the limiter.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { ProvisioningState } from '../model/host';

export { DEFAULT_PROVISIONING_LIMIT } from '../model/provisioning-limit';

/** One limiter per task queue: the hosts a worker fleet drives share one Ironic. */
export const limiterWorkflowId = (taskQueue: string): string => `provisioning-limiter/${taskQueue}`;

export interface PermitRequest {
  /** Unique per request (the host's run id and a counter): a retried request is one request. */
  requestId: string;
  workflowId: string;
  /** The run that asked (or, after it continued as new, the run holding the request now): a closed run's permit is taken back. */
  runId: string;
  /** The state the host waits to enter. */
  state: ProvisioningState;
  at: string;
}

export interface PermitHolder extends PermitRequest {
  grantedAt: string;
}

export interface LimiterState {
  limit: number;
  holders: PermitHolder[];
  /** Waiting requests, oldest first. */
  queue: PermitRequest[];
  /** Waiting requests whose host was told it waits (permitQueuedSignal); absent: none told yet. */
  told?: string[];
}

export interface LimiterInput {
  limit: number;
  /** How long the queue may stand still before the limiter asks Temporal whether its holders' runs are still open. */
  checkSeconds?: number;
  /** Present on continue-as-new. */
  state?: LimiterState;
}

/** Sent by the requestProvisioningPermit activity with signal-with-start; `limit` is the worker's setting. */
export const acquirePermitSignal = defineSignal<[PermitRequest & { limit: number }]>('acquirePermit');
/** A permit (or a place in the queue) given back; unknown ids are ignored. */
export const releasePermitSignal = defineSignal<[{ requestId: string }]>('releasePermit');
/** Limiter → host: the request may go ahead. */
export const permitGrantedSignal = defineSignal<[{ requestId: string }]>('permitGranted');
/**
 * Limiter → host: the limit holds the request (it waits behind the hosts holding permits). Only
 * then does the host show `delayed`: a request granted at once never hears this.
 */
export const permitQueuedSignal = defineSignal<[{ requestId: string }]>('permitQueued');
export const limiterViewQuery = defineQuery<LimiterState>('limiter');
