/**
 * One read of a node's BIOS settings and firmware components from Ironic,
 * for callers that talk to Temporal only: the API's firmware routes (the
 * Kubernetes controller reads Ironic itself).
 * Id `firmware-inventory/<ns>/<name>`: concurrent readers of one host share
 * the run. Two events of history; no state, nothing to replay across versions.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { FirmwareInventoryActivities } from '../activities/firmware-inventory';
import type { IronicBiosSetting } from '../types/firmware-settings';
import type { IronicFirmwareComponent } from '../types/firmware-components';

export interface FirmwareInventoryInput {
  nodeId: string;
}

export interface FirmwareInventory {
  bios: IronicBiosSetting[];
  /** Absent where Ironic is older than API 1.86. */
  components?: IronicFirmwareComponent[];
}

export const FIRMWARE_INVENTORY_WORKFLOW = 'firmwareInventoryWorkflow';
export const firmwareInventoryWorkflowId = (namespace: string, name: string): string => `firmware-inventory/${namespace}/${name}`;

const { readFirmwareInventory } = proxyActivities<FirmwareInventoryActivities>({
  startToCloseTimeout: '60 seconds',
  retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['IronicNodeGone'] },
});

export async function firmwareInventoryWorkflow(input: FirmwareInventoryInput): Promise<FirmwareInventory> {
  return readFirmwareInventory(input);
}
