/**
 * One read of a node's BIOS settings and firmware components from Ironic,
 * for callers that talk to Temporal only: the API's firmware routes (the
 * Kubernetes controller reads Ironic itself).
 * Id `firmware-inventory/<ns>/<name>`: concurrent readers of one host share
 * the run. Two events of history; no state, nothing to replay across versions.
 */
import { proxyActivities } from '@temporalio/workflow';
import { ACTIVITY_OPTIONS } from '../common/activity-options';
import type { FirmwareInventoryActivities } from '../../activities/ironic/firmware-inventory';
import type { FirmwareInventory, FirmwareInventoryInput } from '../../contracts/firmware-inventory';

const { readFirmwareInventory } = proxyActivities<FirmwareInventoryActivities>(ACTIVITY_OPTIONS.ironicFirmwareRead);

export async function firmwareInventoryWorkflow(input: FirmwareInventoryInput): Promise<FirmwareInventory> {
  return readFirmwareInventory(input);
}
