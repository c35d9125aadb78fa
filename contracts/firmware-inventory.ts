/** The firmware inventory workflow's contract (workflows/firmware/firmware-inventory.ts): one read of a node's BIOS settings and firmware components, for callers that talk to Temporal only or that do not reach the host's site's Ironic. */
import type { IronicBiosSetting } from '../model/firmware-settings';
import type { IronicFirmwareComponent } from '../model/firmware-components';

export interface FirmwareInventoryInput {
  nodeId: string;
  /** The host's site (docs/sites.md): its node is read by the site's worker, in the site's Ironic. Unset: the default site. */
  site?: string;
}

/** How long a site may leave a firmware read untaken before the read fails as `site unreachable` (a caller waits for it). */
export const SITE_FIRMWARE_READ_START_SECONDS = 15;

export interface FirmwareInventory {
  bios: IronicBiosSetting[];
  /** Absent where Ironic is older than API 1.86. */
  components?: IronicFirmwareComponent[];
}

export const FIRMWARE_INVENTORY_WORKFLOW = 'firmwareInventoryWorkflow';
export const firmwareInventoryWorkflowId = (namespace: string, name: string): string => `firmware-inventory/${namespace}/${name}`;

export type FirmwareInventoryWorkflow = (input: FirmwareInventoryInput) => Promise<FirmwareInventory>;
