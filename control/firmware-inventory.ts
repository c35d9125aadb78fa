/**
 * Reads a host's firmware from Ironic through the worker (workflows/firmware/firmware-inventory.ts):
 * the API talks to Temporal only. Readers of one host at the same
 * time share one run (USE_EXISTING); a finished run's id is free for the next read.
 */
import { WorkflowFailedError, type Client } from '@temporalio/client';
import type { HostRef } from '../model/host';
import { FIRMWARE_INVENTORY_WORKFLOW, firmwareInventoryWorkflowId, type FirmwareInventory, type FirmwareInventoryInput, type FirmwareInventoryWorkflow } from '../contracts/firmware-inventory';

export class FirmwareReadError extends Error {
  constructor(
    /** The activity's failure type (`IronicNodeGone`), or `Unavailable`. */
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

export async function readFirmwareInventory(client: Client, taskQueue: string, ref: HostRef, input: FirmwareInventoryInput): Promise<FirmwareInventory> {
  const handle = await client.workflow.start<FirmwareInventoryWorkflow>(FIRMWARE_INVENTORY_WORKFLOW, {
    taskQueue,
    workflowId: firmwareInventoryWorkflowId(ref.namespace, ref.name),
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    workflowExecutionTimeout: '5 minutes',
  });
  try {
    return await handle.result();
  } catch (err) {
    if (!(err instanceof WorkflowFailedError)) throw err;
    let cause: unknown = err.cause;
    while (cause instanceof Error && 'cause' in cause && cause.cause instanceof Error && !('type' in cause && typeof cause.type === 'string')) cause = cause.cause;
    const type = cause instanceof Error && 'type' in cause && typeof cause.type === 'string' ? cause.type : 'Unavailable';
    throw new FirmwareReadError(type, `reading the host's firmware from Ironic failed: ${cause instanceof Error ? cause.message : err.message}`);
  }
}
