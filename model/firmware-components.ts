/**
 * Metal3's `HostFirmwareComponents` (metal3.io/v1alpha1): the shapes (its CRD
 * is generated from these schemas) and the pure parts: status.components from
 * Ironic's `GET /v1/nodes/{id}/firmware`, spec.updates checked as the
 * `firmware` clean step checks them.
 */

import { Type, type Static } from '@sinclair/typebox';
import { validateCleanRequest } from './clean';
import type { FieldError } from './field-error';

/** One component as Ironic's `GET /v1/nodes/{id}/firmware` returns it (API 1.86). */
export interface IronicFirmwareComponent {
  component: string;
  initial_version: string | null;
  current_version: string | null;
  last_version_flashed: string | null;
  created_at?: string | null;
  updated_at?: string | null;
}

export const COMPONENTS = { kind: 'HostFirmwareComponents', plural: 'hostfirmwarecomponents', singular: 'hostfirmwarecomponents', shortNames: [] as string[] } as const;

const text = (max: number, description: string) => Type.String({ maxLength: max, description });

/** Metal3's FirmwareUpdate: the checks (component, http(s) URL) are the `firmware` clean step's, said with these field names. */
export const FirmwareUpdateSchema = Type.Object(
  { component: text(64, 'The component to update: bios or bmc'), url: text(2048, 'Where the image is fetched from (http or https)') },
  { additionalProperties: false },
);

export const HostFirmwareComponentsSpecSchema = Type.Object(
  { updates: Type.Array(FirmwareUpdateSchema, { maxItems: 8, description: 'Firmware images to flash, in order' }) },
  { additionalProperties: false },
);
export type HostFirmwareComponentsSpec = Static<typeof HostFirmwareComponentsSpecSchema>;

export const FirmwareComponentStatusSchema = Type.Object(
  {
    component: text(64, 'The component (bios, bmc, …) as Ironic names it'),
    initialVersion: text(256, 'The version Ironic first saw'),
    currentVersion: Type.Optional(text(256, 'The version Ironic reads now')),
    lastVersionFlashed: Type.Optional(text(256, 'The version last flashed through Ironic')),
    updatedAt: Type.Optional(text(64, 'When Ironic last saw it change (RFC 3339)')),
  },
  { additionalProperties: false },
);
export type FirmwareComponentStatus = Static<typeof FirmwareComponentStatusSchema>;

export const HostFirmwareComponentsStatusSchema = Type.Object(
  {
    updates: Type.Optional(Type.Array(FirmwareUpdateSchema, { maxItems: 8, description: 'The updates last handed to the host (applied, or applying, as its firmware clean step)' })),
    components: Type.Optional(Type.Array(FirmwareComponentStatusSchema, { maxItems: 64, description: 'The components Ironic reports' })),
    lastUpdated: Type.Optional(text(64, 'When the status was last updated (RFC 3339)')),
    conditions: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }), { maxItems: 8, description: 'Valid and ChangeDetected' })),
  },
  { additionalProperties: false },
);
export type HostFirmwareComponentsStatus = Static<typeof HostFirmwareComponentsStatusSchema>;

/** status.components from Ironic's list (BMO's GetFirmwareComponents: nulls as empty). */
export function componentsFromIronic(list: readonly IronicFirmwareComponent[]): FirmwareComponentStatus[] {
  return list.map((c) => ({
    component: c.component,
    initialVersion: c.initial_version ?? '',
    ...(c.current_version ? { currentVersion: c.current_version } : {}),
    ...(c.last_version_flashed ? { lastVersionFlashed: c.last_version_flashed } : {}),
    ...(c.updated_at ? { updatedAt: c.updated_at } : {}),
  }));
}

/**
 * The same components, whatever the order of each one's keys: the API server gives an object's keys
 * back sorted (Go maps), not in the order componentsFromIronic writes them, so comparing the JSON
 * text would find every read different and rewrite an unchanged status each time.
 */
export function sameComponents(a: readonly FirmwareComponentStatus[] | undefined, b: readonly FirmwareComponentStatus[]): boolean {
  const key = (cs: readonly FirmwareComponentStatus[] | undefined) =>
    JSON.stringify((cs ?? []).map((c) => [c.component, c.initialVersion, c.currentVersion ?? '', c.lastVersionFlashed ?? '', c.updatedAt ?? '']));
  return key(a) === key(b);
}

/**
 * Field-named errors in spec.updates: the `firmware` clean step's checks (a component of bios or
 * bmc, an http(s) URL), and, as BMO checks, a component Ironic reports no version of; that last
 * only where Ironic reports components at all (fake-hardware's firmware interface reports none).
 */
export function firmwareUpdatesErrors(updates: readonly { component: string; url: string }[], components: readonly FirmwareComponentStatus[]): FieldError[] {
  if (updates.length === 0) return [];
  const step = validateCleanRequest({ steps: [{ name: 'firmware', updates }] });
  if (!step.ok) return step.errors.map((e) => ({ field: e.field.replace(/^steps\[0\]\.updates/, 'spec.updates'), reason: e.reason }));
  if (components.length === 0) return [];
  const known = components.map((c) => c.component);
  return updates.flatMap((u, i) =>
    known.includes(u.component) ? [] : [{ field: `spec.updates[${i}].component`, reason: `Ironic reports no ${u.component} component for this host; it reports: ${known.join(', ')}` }],
  );
}

/** Whether the updates asked differ from those last handed over (BMO's ChangeDetected). */
export function updatesChanged(spec: readonly { component: string; url: string }[], status: readonly { component: string; url: string }[] | undefined): boolean {
  const key = (l: readonly { component: string; url: string }[]) => JSON.stringify(l.map((u) => [u.component, u.url]));
  return key(spec) !== key(status ?? []);
}
