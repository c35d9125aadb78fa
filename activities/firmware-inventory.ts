/**
 * What Ironic reports of a node's firmware, read for the HostFirmwareSettings
 * and HostFirmwareComponents controllers and the API's `…/firmware-settings`
 * (they talk to Temporal only; this runs on the worker, which has Ironic's
 * address and credentials). A read: safe to retry, changes nothing.
 */
import { ApplicationFailure } from '@temporalio/common';
import { IronicError, type IronicClient } from '../clients/ironic/client';
import type { FirmwareInventory, FirmwareInventoryInput } from '../workflows/firmware-inventory';

export function createFirmwareInventoryActivities(deps: { ironic: IronicClient }) {
  const { ironic } = deps;
  return {
    async readFirmwareInventory(input: FirmwareInventoryInput): Promise<FirmwareInventory> {
      try {
        const bios = await ironic.getBiosRegistry(input.nodeId);
        // GET …/firmware needs API 1.86: an older Ironic has no components to report.
        const components = (await ironic.supports('1.86')) ? await ironic.getFirmwareComponents(input.nodeId) : undefined;
        return { bios, ...(components ? { components } : {}) };
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
