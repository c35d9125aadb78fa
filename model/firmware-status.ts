/**
 * What the HostFirmwareSettings controller (and `…/firmware-settings` in API
 * mode) derives from Ironic's BIOS settings, as BMO's
 * hostfirmwaresettings_controller derives it: the reported settings without
 * passwords, the FirmwareSchema and its shared name (`schema-<hash>`, equal for
 * hosts of the same registry), the `ChangeDetected` and `Valid` conditions,
 * the field-named errors, and the settings a `bios` clean step would change.
 * Pure: the caller does the reads and writes.
 */
import { createHash } from 'node:crypto';
import { validateCleanRequest } from './clean';
import type { FieldError } from './field-error';
import { changedSettings, firmwareSettingsErrors, schemaFromIronic, type IronicBiosSetting, type SettingSchemas } from './firmware-settings';

/** BMO keeps no password setting in status or schema (vendors report encrypted ones). */
const isPassword = (name: string): boolean => name.includes('Password');

/** status.settings: what Ironic reports, by name, passwords left out. */
export function reportedSettings(bios: readonly IronicBiosSetting[]): Record<string, string> {
  return Object.fromEntries(bios.filter((b) => !isPassword(b.name)).map((b) => [b.name, b.value ?? '']));
}

/** The FirmwareSchema's `spec.schema`: Ironic's registry, passwords left out. */
export function firmwareSchemaOf(bios: readonly IronicBiosSetting[]): SettingSchemas {
  const schema = schemaFromIronic(bios);
  return Object.fromEntries(Object.entries(schema).filter(([name, s]) => !isPassword(name) && s.attribute_type !== 'Password'));
}

/**
 * BMO's GetSchemaName: `schema-` and the first 8 hex digits of a SHA-256 over the sorted names,
 * types, allowable values and limits, so hosts of the same vendor and model share one schema.
 */
export function firmwareSchemaName(schema: SettingSchemas): string {
  const keys: string[] = [];
  for (const [name, s] of Object.entries(schema)) {
    keys.push(name, s.attribute_type ?? '', ...(s.allowable_values ?? []));
    for (const n of [s.lower_bound, s.upper_bound, s.min_length, s.max_length]) if (n !== undefined) keys.push(String(n));
    if (s.read_only !== undefined) keys.push(String(s.read_only));
  }
  keys.sort();
  // Go's fmt %v of a []string: "[a b c]".
  return `schema-${createHash('sha256').update(`[${keys.join(' ')}]`).digest('hex').slice(0, 8)}`;
}

export interface Condition {
  type: 'Valid' | 'ChangeDetected';
  status: 'True' | 'False';
  reason: string;
  message: string;
  observedGeneration: number;
  lastTransitionTime: string;
}

export interface FirmwareSettingsEvaluation {
  changeDetected: boolean;
  /** Field-named (`spec.settings.<name>`): what makes `Valid` false. */
  errors: FieldError[];
  /** The desired values that differ from what Ironic reports: the `bios` step's settings. */
  changed: Record<string, string>;
}

/**
 * BMO's updateStatus: a change is detected when a desired setting differs from what Ironic reports
 * or is not reported at all; only then is the spec validated (a password, a setting Ironic does not
 * report, what the registry forbids, what the clean step refuses).
 */
export function evaluateFirmwareSettings(desired: Record<string, string | number>, reported: Record<string, string>, schema: SettingSchemas): FirmwareSettingsEvaluation {
  const changed = changedSettings(desired, reported);
  const changeDetected = Object.keys(changed).length > 0;
  if (!changeDetected) return { changeDetected, errors: [], changed };
  const errors: FieldError[] = [];
  const checkable: Record<string, string | number> = {};
  for (const [name, value] of Object.entries(desired)) {
    if (isPassword(name)) errors.push({ field: `spec.settings.${name}`, reason: 'a Password setting cannot be set' });
    else if (!(name in reported)) errors.push({ field: `spec.settings.${name}`, reason: 'not in status.settings: Ironic reports no such setting for this host' });
    else checkable[name] = value;
  }
  // A setting with a registry entry is checked against it; Ironic's names are the schema's.
  errors.push(...firmwareSettingsErrors(checkable, Object.fromEntries(Object.entries(schema).filter(([name]) => name in checkable))));
  if (errors.length === 0) {
    const step = validateCleanRequest({ steps: [{ name: 'bios', settings: changed }] });
    if (!step.ok) errors.push(...step.errors.map((e) => ({ field: e.field.replace(/^steps\[0\]\.settings/, 'spec.settings'), reason: e.reason })));
  }
  return { changeDetected, errors, changed };
}

/** BMO's reasons and message, which differ between HostFirmwareSettings and HostFirmwareComponents. */
export interface ConditionWords {
  ok: string;
  bad: string;
  message: (errors: FieldError[]) => string;
}
export const SETTINGS_WORDS: ConditionWords = { ok: 'Success', bad: 'ConfigurationError', message: () => 'Invalid BIOS setting' };

/** The two conditions as BMO sets them (meta.SetStatusCondition: the transition time moves only with the status). */
export function firmwareConditions(
  previous: readonly Partial<Condition>[] | undefined,
  evaluation: Pick<FirmwareSettingsEvaluation, 'changeDetected' | 'errors'>,
  generation: number,
  now: string,
  words: ConditionWords = SETTINGS_WORDS,
): Condition[] {
  const valid = evaluation.errors.length === 0;
  const wanted: Omit<Condition, 'lastTransitionTime'>[] = [
    { type: 'ChangeDetected', status: evaluation.changeDetected ? 'True' : 'False', reason: words.ok, message: '', observedGeneration: generation },
    { type: 'Valid', status: valid ? 'True' : 'False', reason: valid ? words.ok : words.bad, message: valid ? '' : words.message(evaluation.errors), observedGeneration: generation },
  ];
  return wanted.map((c) => {
    const before = previous?.find((p) => p.type === c.type);
    return { ...c, lastTransitionTime: before?.status === c.status && before.lastTransitionTime ? before.lastTransitionTime : now };
  });
}

/** Whether two condition lists say the same (type, status, reason, message, generation). */
export function sameConditions(a: readonly Partial<Condition>[] | undefined, b: readonly Partial<Condition>[]): boolean {
  const key = (cs: readonly Partial<Condition>[] | undefined) =>
    JSON.stringify((cs ?? []).map((c) => [c.type, c.status, c.reason, c.message ?? '', c.observedGeneration]).sort());
  return key(a) === key(b);
}
