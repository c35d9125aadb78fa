/** The parts of Ironic's node and port resources that metalflow reads. */
export interface IronicNode {
  uuid: string;
  name: string | null;
  driver: string;
  provision_state: string;
  target_provision_state: string | null;
  power_state: string | null;
  target_power_state: string | null;
  last_error: string | null;
  /** When the provision state last changed (Ironic's clock). */
  provision_updated_at?: string | null;
  maintenance: boolean;
  /** Why the node is in maintenance, as whoever put it there said. */
  maintenance_reason?: string | null;
  /** Why Ironic itself put the node in maintenance (`service failure`, `power failure`, …); null when it did not. */
  fault?: string | null;
  reservation: string | null;
  driver_info: Record<string, unknown>;
  instance_info: Record<string, unknown>;
  /** null: Ironic's default for the hardware type. */
  deploy_interface?: string | null;
  inspect_interface?: string | null;
  /** Network configuration Ironic hands the agent ramdisk (Metal3's preprovisioningNetworkDataName). */
  network_data?: Record<string, unknown> | null;
  properties: Record<string, unknown>;
  automated_clean: boolean | null;
  /** The RAID layout Ironic last recorded as built, and the one it was asked for. */
  raid_config?: Record<string, unknown>;
  target_raid_config?: Record<string, unknown>;
  extra: Record<string, unknown>;
  /** Ironic never powers the node off, only reboots it (API 1.95; absent when read at an older version). */
  disable_power_off?: boolean;
  /** The BMC's overall health (`OK`, `Warning`, `Critical`; API 1.109), cached by Ironic's power sync. */
  health?: string | null;
}

export interface IronicPort {
  uuid: string;
  address: string;
  node_uuid: string;
  pxe_enabled?: boolean;
}

/** Provision states in which Ironic is still working; callers wait them out. */
export const TRANSITIONAL_STATES = new Set([
  'verifying',
  'inspecting',
  'inspect wait',
  'cleaning',
  'clean wait',
  'deploying',
  'wait call-back',
  'deleting',
  'adopting',
  'rescuing',
  'rescue wait',
  'unrescuing',
  'servicing',
  'service wait',
]);

/** States from which Ironic allows deleting the node without maintenance mode. */
export const DELETABLE_STATES = new Set(['enroll', 'manageable', 'available', 'adopt failed']);

/** The API version of `GET /v1/nodes/{id}/firmware` (Ironic 2023.2). */
export const FIRMWARE_MICROVERSION = '1.86';

/**
 * What a power read of a node asks for (the host workflow's idle power check): less to send and parse than the whole
 * node (driver_info, properties, instance_info, links). Not cheaper for Ironic: its CPU per
 * GET measured the same either way, 10-17 ms (bench/ironic-read-cost.ts, 2026-11-29).
 */
export const POWER_FIELDS = ['power_state', 'target_power_state'] as const;
