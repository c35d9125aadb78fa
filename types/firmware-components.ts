/**
 * Metal3's `HostFirmwareComponents` (metal3.io/v1alpha1): the shapes (its CRD
 * is generated from these schemas) and the pure parts: status.components from
 * Ironic's `GET /v1/nodes/{id}/firmware`, spec.updates checked as the
 * `firmware` clean step checks them.
 */

/** One component as Ironic's `GET /v1/nodes/{id}/firmware` returns it (API 1.86). */
export interface IronicFirmwareComponent {
  component: string;
  initial_version: string | null;
  current_version: string | null;
  last_version_flashed: string | null;
  created_at?: string | null;
  updated_at?: string | null;
}
