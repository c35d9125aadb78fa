/**
 * The host's own `spec.raid` and `spec.firmware` (Metal3's): validated as the
 * `raid` and `bios` clean steps are, and turned into those steps. What was
 * last applied is recorded where BMO records it (`status.provisioning.raid`,
 * `status.provisioning.firmware`), so a host whose spec still says the same
 * runs no step again, and a status taken over from Metal3 is read the same way.
 */
import { firmwareConfig, raidConfig, type CleanStep } from './clean';
import type { FieldError } from './field-error';
import type { HostSpec, HostStatus } from './host';

/** null, '', [] or an object of such: how Metal3's Go types serialise "nothing asked" (e.g. raid: {hardwareRAIDVolumes: null}). */
export function isEmptyValue(v: unknown): boolean {
  if (v === null || v === undefined || v === '') return true;
  if (Array.isArray(v)) return v.length === 0;
  return typeof v === 'object' && Object.values(v).every(isEmptyValue);
}

/** Keys with null values dropped (Metal3's clients send `hardwareRAIDVolumes: null` beside the list they mean). */
function withoutNulls(v: unknown): unknown {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
  return Object.fromEntries(Object.entries(v).filter(([, x]) => !isEmptyValue(x) || x === false));
}

/** Field-named errors in spec.raid / spec.firmware, the same rules (and words) as the clean steps'. */
export function hostSettingsErrors(spec: HostSpec): FieldError[] {
  const errors: FieldError[] = [];
  if (!isEmptyValue(spec.raid)) raidConfig(withoutNulls(spec.raid), 'spec.raid', errors);
  if (!isEmptyValue(spec.firmware)) firmwareConfig(withoutNulls(spec.firmware), 'spec.firmware', errors);
  if (errors.length === 0 && (spec.provisioner ?? 'ironic') === 'direct') {
    for (const key of ['raid', 'firmware'] as const) {
      if (!isEmptyValue(spec[key])) errors.push({ field: `spec.${key}`, reason: 'applied through Ironic cleaning; provisioner direct does not apply it (not built yet): remove it or use provisioner ironic' });
    }
  }
  return errors;
}

/** The clean steps spec.raid and spec.firmware ask for (none for empty values); the spec is valid. */
export function settingsSteps(spec: HostSpec | undefined): CleanStep[] {
  const steps: CleanStep[] = [];
  if (spec && !isEmptyValue(spec.raid)) steps.push({ name: 'raid', raid: withoutNulls(spec.raid) as Extract<CleanStep, { name: 'raid' }>['raid'] });
  if (spec && !isEmptyValue(spec.firmware)) steps.push({ name: 'bios', firmware: withoutNulls(spec.firmware) as NonNullable<Extract<CleanStep, { name: 'bios' }>['firmware']> });
  return steps;
}

/** JSON with keys sorted, so a status written by BMO (its own key order) compares equal. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (typeof v === 'object' && v !== null) {
    const entries = Object.entries(v).filter(([, x]) => x !== undefined && x !== null).sort(([a], [b]) => a.localeCompare(b));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** The steps whose spec value differs from what status.provisioning records as applied. */
export function pendingSettingsSteps(spec: HostSpec | undefined, status: HostStatus): CleanStep[] {
  const applied = (step: CleanStep): unknown => (step.name === 'raid' ? status.provisioning.raid : status.provisioning.firmware);
  const wanted = (step: CleanStep): unknown => (step.name === 'raid' ? step.raid : step.name === 'bios' ? step.firmware : undefined);
  return settingsSteps(spec).filter((step) => canonical(applied(step)) !== canonical(wanted(step)));
}

/** Records the steps that ran as applied (BMO's status.provisioning.raid / .firmware). */
export function recordAppliedSettings(status: HostStatus, steps: readonly CleanStep[]): void {
  for (const step of steps) {
    if (step.name === 'raid') status.provisioning.raid = step.raid as Record<string, unknown>;
    if (step.name === 'bios' && step.firmware) status.provisioning.firmware = step.firmware as Record<string, unknown>;
  }
}
