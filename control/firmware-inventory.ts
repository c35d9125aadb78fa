/**
 * Reads a host's firmware from Ironic through the worker (workflows/firmware/firmware-inventory.ts):
 * the API talks to Temporal only, and a configured site's Ironic is reached by its site worker only
 * (the controller reads a host of such a site this way). Readers of one host at the same
 * time share one run (USE_EXISTING); a finished run's id is free for the next read.
 */
import { TimeoutFailure, WorkflowFailedError, type Client } from '@temporalio/client';
import type { HostRef } from '../model/host';
import { hostSiteQueue } from '../model/site';
import { runReadWorkflow } from './read-workflow';
import { FIRMWARE_INVENTORY_WORKFLOW, firmwareInventoryWorkflowId, SITE_FIRMWARE_READ_START_SECONDS, type FirmwareInventory, type FirmwareInventoryInput } from '../contracts/firmware-inventory';

export class FirmwareReadError extends Error {
  constructor(
    /** The activity's failure type (`IronicNodeGone`), `SiteUnreachable` (the host's site took no read), or `Unavailable`. */
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

export async function readFirmwareInventory(client: Client, taskQueue: string, ref: HostRef, input: FirmwareInventoryInput): Promise<FirmwareInventory> {
  try {
    return await runReadWorkflow<FirmwareInventory>(client, FIRMWARE_INVENTORY_WORKFLOW, taskQueue, firmwareInventoryWorkflowId(ref.namespace, ref.name), [input]);
  } catch (err) {
    if (!(err instanceof WorkflowFailedError)) throw err;
    let cause: unknown = err.cause;
    const queue = hostSiteQueue(input.site);
    for (let c: unknown = cause; c instanceof Error; c = c.cause) {
      if (queue && c instanceof TimeoutFailure && c.timeoutType === 'SCHEDULE_TO_START') {
        throw new FirmwareReadError('SiteUnreachable', `site unreachable: no worker of site "${input.site ?? ''}" took the firmware read from task queue ${queue} within ${SITE_FIRMWARE_READ_START_SECONDS} s (its worker: npm run worker -- --site ${input.site ?? ''})`);
      }
    }
    while (cause instanceof Error && 'cause' in cause && cause.cause instanceof Error && !('type' in cause && typeof cause.type === 'string')) cause = cause.cause;
    const type = cause instanceof Error && 'type' in cause && typeof cause.type === 'string' ? cause.type : 'Unavailable';
    throw new FirmwareReadError(type, `reading the host's firmware from Ironic failed: ${cause instanceof Error ? cause.message : err.message}`);
  }
}
