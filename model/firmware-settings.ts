/**
 * Metal3's `HostFirmwareSettings` and `FirmwareSchema` (metal3.io/v1alpha1):
 * the shapes (their CRDs are generated from these schemas) and the pure
 * checks: a FirmwareSchema built from Ironic's BIOS registry
 * (`GET /v1/nodes/{id}/bios?detail=true`), and desired settings validated
 * against it before anything is sent to Ironic, each error naming the
 * setting (`spec.settings.<name>`), what is wrong and what is accepted.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { FieldError } from './field-error';

export const FIRMWARE = {
  group: 'metal3.io',
  version: 'v1alpha1',
  settings: { kind: 'HostFirmwareSettings', plural: 'hostfirmwaresettings', singular: 'hostfirmwaresettings', shortNames: ['hfs'] },
  schema: { kind: 'FirmwareSchema', plural: 'firmwareschemas', singular: 'firmwareschema', shortNames: [] as string[] },
} as const;

const MAX_SETTINGS = 1024;
const name = (description: string) => Type.String({ maxLength: 253, description });
const bound = (description: string) => Type.Optional(Type.Integer({ description }));

export const ATTRIBUTE_TYPES = ['Enumeration', 'String', 'Integer', 'Boolean', 'Password'] as const;

/** Metal3's SettingSchema: Ironic's BIOS registry fields of one setting, by Ironic's own names. */
export const SettingSchemaSchema = Type.Object(
  {
    attribute_type: Type.Optional(Type.Union(ATTRIBUTE_TYPES.map((t) => Type.Literal(t)), { description: 'The type of setting' })),
    allowable_values: Type.Optional(Type.Array(Type.String({ maxLength: 256 }), { maxItems: 256, description: 'The values an Enumeration accepts' })),
    lower_bound: bound('The lowest value of an Integer'),
    upper_bound: bound('The highest value of an Integer'),
    min_length: bound('The shortest String'),
    max_length: bound('The longest String'),
    read_only: Type.Optional(Type.Boolean({ description: 'The setting cannot be changed' })),
    reset_required: Type.Optional(Type.Boolean({ description: 'A reset is needed after changing it' })),
    unique: Type.Optional(Type.Boolean({ description: 'Unique to this node (e.g. a serial number)' })),
  },
  { additionalProperties: false },
);
export type SettingSchema = Static<typeof SettingSchemaSchema>;

export const FirmwareSchemaSpecSchema = Type.Object(
  {
    hardwareVendor: Type.Optional(Type.String({ maxLength: 255, description: 'The hardware vendor this schema is for' })),
    hardwareModel: Type.Optional(Type.String({ maxLength: 255, description: 'The hardware model this schema is for' })),
    schema: Type.Object({}, { additionalProperties: SettingSchemaSchema, maxProperties: 4096, description: 'Each setting by name' }),
  },
  { additionalProperties: false },
);
/** The schema's `schema` map (TypeBox types an object of additionalProperties as {}). */
export type SettingSchemas = Record<string, SettingSchema>;
export type FirmwareSchemaSpec = Omit<Static<typeof FirmwareSchemaSpecSchema>, 'schema'> & { schema: SettingSchemas };

/** A desired value: Metal3's intstr.IntOrString. */
const DesiredValueSchema = Type.Union([Type.String({ maxLength: 256 }), Type.Integer()]);

export const HostFirmwareSettingsSpecSchema = Type.Object(
  {
    settings: Type.Object({}, { additionalProperties: DesiredValueSchema, maxProperties: MAX_SETTINGS, description: 'Desired firmware settings by name' }),
  },
  { additionalProperties: false },
);
export type HostFirmwareSettingsSpec = Static<typeof HostFirmwareSettingsSpecSchema>;

export const HostFirmwareSettingsStatusSchema = Type.Object(
  {
    schema: Type.Optional(Type.Object({ namespace: name('Namespace of the FirmwareSchema'), name: name('Name of the FirmwareSchema') }, { additionalProperties: false })),
    settings: Type.Optional(Type.Object({}, { additionalProperties: Type.String({ maxLength: 256 }), maxProperties: 4096, description: 'The settings Ironic reports, by name' })),
    lastUpdated: Type.Optional(Type.String({ maxLength: 64, description: 'When the status was last updated (RFC 3339)' })),
    conditions: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }), { maxItems: 8, description: 'Valid and ChangeDetected' })),
  },
  { additionalProperties: false },
);
export type HostFirmwareSettingsStatus = Static<typeof HostFirmwareSettingsStatusSchema>;

/** One setting as Ironic's `GET /v1/nodes/{id}/bios?detail=true` returns it (registry fields null when the BMC has no registry). */
export interface IronicBiosSetting {
  name: string;
  value: string | null;
  attribute_type?: string | null;
  allowable_values?: string[] | null;
  lower_bound?: number | null;
  upper_bound?: number | null;
  min_length?: number | null;
  max_length?: number | null;
  read_only?: boolean | null;
  reset_required?: boolean | null;
  unique?: boolean | null;
}

/** The FirmwareSchema of Ironic's registry: every setting Ironic knows, with the registry fields it has. */
export function schemaFromIronic(settings: readonly IronicBiosSetting[]): SettingSchemas {
  const out: Record<string, SettingSchema> = {};
  for (const s of settings) {
    const entry: Record<string, unknown> = {};
    for (const key of ['lower_bound', 'upper_bound', 'min_length', 'max_length', 'read_only', 'reset_required', 'unique'] as const) {
      if (s[key] !== null && s[key] !== undefined) entry[key] = s[key];
    }
    if (s.attribute_type && (ATTRIBUTE_TYPES as readonly string[]).includes(s.attribute_type)) entry.attribute_type = s.attribute_type;
    if (s.allowable_values && s.allowable_values.length > 0) entry.allowable_values = s.allowable_values;
    out[s.name] = entry as SettingSchema;
  }
  return out;
}

const isInteger = (v: string | number): boolean => (typeof v === 'number' ? Number.isInteger(v) : /^-?\d+$/.test(v));

/** What is wrong with `value` for this setting, or undefined (Metal3's CheckSettingIsValid, said in words). */
function settingError(schema: SettingSchema, value: string | number): string | undefined {
  if (schema.read_only) return 'is read-only in the BIOS registry; remove it';
  const text = String(value);
  switch (schema.attribute_type) {
    case 'Enumeration':
      return schema.allowable_values?.includes(text) ? undefined : `${JSON.stringify(text)} is not allowed; accepted: ${(schema.allowable_values ?? []).join(', ')}`;
    case 'Integer': {
      if (!isInteger(value)) return `${JSON.stringify(text)} is not an integer`;
      const n = Number(value);
      const { lower_bound: lo, upper_bound: hi } = schema;
      if ((lo !== undefined && n < lo) || (hi !== undefined && n > hi)) return `${n} is out of range; accepted: ${lo ?? '…'} to ${hi ?? '…'}`;
      return undefined;
    }
    case 'String': {
      const { min_length: lo, max_length: hi } = schema;
      if ((lo !== undefined && text.length < lo) || (hi !== undefined && text.length > hi)) return `is ${text.length} characters long; accepted: ${lo ?? 0} to ${hi ?? '…'}`;
      return undefined;
    }
    case 'Boolean':
      return text === 'true' || text === 'false' ? undefined : `${JSON.stringify(text)} is not a boolean; accepted: true, false`;
    case 'Password':
      return 'is a password; metalflow never sets passwords through firmware settings';
    default:
      // No registry type (Ironic's BMC gave none): any value, as in Metal3.
      return undefined;
  }
}

/**
 * Field-named errors in desired settings: a name not in the schema, a read-only setting, a value
 * outside its limits or allowable values, a password. `field` prefixes each (`spec.settings`).
 */
export function firmwareSettingsErrors(desired: Record<string, string | number>, schema: SettingSchemas, field = 'spec.settings'): FieldError[] {
  const errors: FieldError[] = [];
  const known = Object.keys(schema).sort();
  for (const [settingName, value] of Object.entries(desired)) {
    const entry = schema[settingName];
    if (!entry) {
      const some = known.slice(0, 20).join(', ') + (known.length > 20 ? `, … (${known.length} in all)` : '');
      errors.push({ field: `${field}.${settingName}`, reason: `not in the host's firmware schema; known settings: ${some || 'none (Ironic reports no BIOS settings for this host yet)'}` });
      continue;
    }
    const reason = settingError(entry, value);
    if (reason) errors.push({ field: `${field}.${settingName}`, reason });
  }
  return errors;
}

/** The desired settings whose value differs from what Ironic reports (as strings: Ironic's values are). */
export function changedSettings(desired: Record<string, string | number>, current: Record<string, string | null>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(desired)
      .map(([k, v]) => [k, String(v)] as const)
      .filter(([k, v]) => current[k] !== v),
  );
}
