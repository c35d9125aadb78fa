/**
 * What Ironic reports of a node's firmware: its BIOS settings with their
 * registry (`GET …/bios?detail=true`) and, from API 1.86, its firmware
 * components. One read for the worker's activity (the API's routes) and for the
 * Kubernetes controller, which reads Ironic itself: a read changes nothing and
 * belongs in no workflow's history.
 */
import type { IronicBiosSetting } from '../../model/firmware-settings';
import type { IronicFirmwareComponent } from '../../model/firmware-components';
import type { IronicClient } from './client';

export interface NodeFirmware {
  bios: IronicBiosSetting[];
  /** Absent where Ironic is older than API 1.86. */
  components?: IronicFirmwareComponent[];
}

/** Throws IronicError as the client does (`not-found` when the node is gone). */
export async function readNodeFirmware(ironic: IronicClient, nodeId: string): Promise<NodeFirmware> {
  const bios = await ironic.getBiosRegistry(nodeId);
  const components = (await ironic.supports('1.86')) ? await ironic.getFirmwareComponents(nodeId) : undefined;
  return { bios, ...(components ? { components } : {}) };
}
