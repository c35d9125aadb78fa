/** The firmware inventory workflow's contract (workflows/firmware/firmware-inventory.ts): one read of a node's BIOS settings and firmware components, for callers that talk to Temporal only. */
import type { IronicBiosSetting } from '../model/firmware-settings';
import type { IronicFirmwareComponent } from '../model/firmware-components';

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

export type FirmwareInventoryWorkflow = (input: FirmwareInventoryInput) => Promise<FirmwareInventory>;
