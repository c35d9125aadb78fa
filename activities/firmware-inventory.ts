/**
 * What Ironic reports of a node's firmware, read for the API's
 * `…/firmware-settings` (it talks to Temporal only; this runs on the worker,
 * which has Ironic's address and credentials). A read: safe to retry, changes
 * nothing.
 */
import { ApplicationFailure } from '@temporalio/common';
import { IronicError, type IronicClient } from '../clients/ironic/client';
import { readNodeFirmware } from '../clients/ironic/firmware-inventory';
import type { FirmwareInventory, FirmwareInventoryInput } from '../workflows/firmware-inventory';

export function createFirmwareInventoryActivities(deps: { ironic: IronicClient }) {
  const { ironic } = deps;
  return {
    async readFirmwareInventory(input: FirmwareInventoryInput): Promise<FirmwareInventory> {
      try {
        return await readNodeFirmware(ironic, input.nodeId);
      } catch (err) {
        if (err instanceof IronicError && err.kind === 'not-found') {
          throw ApplicationFailure.create({ type: 'IronicNodeGone', nonRetryable: true, message: `Ironic has no node ${input.nodeId}` });
        }
        throw err;
      }
    },
  };
}

export type FirmwareInventoryActivities = ReturnType<typeof createFirmwareInventoryActivities>;
