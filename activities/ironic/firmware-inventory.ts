/**
 * What Ironic reports of a node's firmware, read for the API's
 * `…/firmware-settings` (it talks to Temporal only; this runs on the worker,
 * which has Ironic's address and credentials). A read: safe to retry, changes
 * nothing.
 */
import { IronicError, type IronicClient } from '../../clients/ironic/client';
import { nodeGone, translate } from './node-driver';
import { readNodeFirmware } from '../../clients/ironic/firmware-inventory';
import type { FirmwareInventory, FirmwareInventoryInput } from '../../contracts/firmware-inventory';

export function createFirmwareInventoryActivities(deps: { ironic: IronicClient }) {
  const { ironic } = deps;
  return {
    async readFirmwareInventory(input: FirmwareInventoryInput): Promise<FirmwareInventory> {
      try {
        return await readNodeFirmware(ironic, input.nodeId);
      } catch (err) {
        // Every path read is under the node's own: a 404 means the node is gone.
        if (err instanceof IronicError && err.kind === 'not-found') throw nodeGone(input.nodeId);
        return translate(err);
      }
    },
  };
}

export type FirmwareInventoryActivities = ReturnType<typeof createFirmwareInventoryActivities>;
