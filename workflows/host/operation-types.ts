/** What every host operation takes and returns (shared by the Ironic and direct paths). */
import type { AddressNetworkData } from '../../model/network-data';
import type { HardwareDetails, HostRef, HostSpec, Image } from '../../model/host';
import type { PowerOrder } from './provisioners/power';
import type { CleanRequest } from '../../model/clean';

export interface OperationInput {
  ref: HostRef;
  /** References only (secret names), never secret values. */
  spec?: HostSpec;
  nodeId?: string;
  /** Provision only: the config drive's meta_data.uuid (host-uid.ts). */
  uid?: string;
  /** Power target for the `power` operation. */
  powerOn?: boolean;
  /**
   * Enroll only: the host is provisioned but Ironic's node may be new (after a
   * detach or a status restore): adopt it as active, with this image, instead of deploying.
   */
  adopt?: { image?: Image };
  /** Provision only: the image as checked (image-check.ts), a checksum-file URL resolved to its hash; else spec.image. */
  image?: Image;
  /** Provision only: `image` was verified whole on its way into the image cache (image-check.ts). */
  imageVerified?: true;
  /** Steady-state power change or reboot: target, soft/hard, Ironic or BMC (power-operations.ts). */
  power?: PowerOrder;
  /** Clean only: the named steps, in order (clean-operation.ts). */
  clean?: CleanRequest;
  /** Provision only: the pool address network_data.json is rendered from (no spec.networkData; host-dhcp.ts). */
  networkDataFrom?: AddressNetworkData;
  /** The step's activity brings the node's settings in line with `spec` on its first read (rules/node-settings.ts). */
  settingsInStep?: true;
  /** Prepare only: the available host would power on next through Ironic; the prepare's activity does it (rules/power-after-prepare.ts). */
  powerOnAfterPrepare?: true;
}

export interface OperationOutcome {
  nodeId?: string;
  poweredOn?: boolean;
  hardware?: HardwareDetails;
  /** Something the host's record and Event should say about a step that succeeded (e.g. what was skipped). */
  note?: string;
  /** The success Event's reason when the operation's own says more than `<Op>Succeeded` (a move: `SiteMoved`). */
  reason?: string;
}
