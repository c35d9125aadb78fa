/**
 * Metal3's BareMetalHost annotations. Where Metal3 refuses a value (its
 * webhook, a status or hardware details that do not decode), it is an error to
 * report (Event and status message) and the host is not touched. Where Metal3
 * reads a value it cannot parse as a default (detached, reboot), it is read the
 * same way, never silently: a warning says how it was read.
 */
import { HardwareDetailsSchema, HostStatusSchema, type HardwareDetails, type HostSpec, type HostStatus } from '../../model/host';
import { schemaErrors } from '../../model/validate';
import { metal3StatusAsGoReads } from '../../model/metal3-status';
import type { FieldError } from '../../model/field-error';
import type { RebootMode } from '../../contracts/power-requests';
import { ANNOTATIONS } from '../../model/metal3-annotations';

export { ANNOTATIONS };

export interface HostAnnotations {
  paused: boolean;
  /** The paused annotation's value (who paused it, e.g. CAPM3 or a pivot), shown as the reason. */
  pausedBy?: string;
  /** Metal3's DetachedAnnotationArguments: deleteAction `delete` (default) or `delay`; `force` detaches in any state. */
  detached?: { deleteAction: 'delay' | 'delete'; force: boolean };
  /** Status to restore instead of registering and inspecting from scratch. */
  restoreStatus?: HostStatus;
  /** `disabled` skips inspection; `requested` asks to re-inspect an available host. */
  inspect?: 'disabled' | 'requested';
  hardwareDetails?: HardwareDetails;
  /** `reboot.metal3.io`: one reboot, soft first unless hard. */
  reboot?: { mode: RebootMode };
  /** `reboot.metal3.io/<key>`: keyed power-off requests and their mode. */
  powerOff: Record<string, RebootMode>;
}

/** Where Metal3 reads a value it cannot parse as a default, so do we, and say so (`InvalidAnnotationValue`). */
const decodeJson = (raw: string): { value?: unknown; error?: string } => {
  try {
    return { value: JSON.parse(raw) };
  } catch (err) {
    return { error: `is not valid JSON (${(err as Error).message})` };
  }
};
const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const unknownKeys = (o: Record<string, unknown>, known: string[]) => Object.keys(o).filter((k) => !known.includes(k));

/**
 * A reboot annotation's value, as Metal3 reads it (RebootAnnotationArguments): empty, or JSON
 * `{"mode": "hard" | "soft", "force": bool}`. What does not parse is a soft reboot, as in Metal3
 * (getRebootAnnotationArguments), with a warning: the request is served, never dropped.
 */
function parseRebootValue(field: string, raw: string, warnings: FieldError[]): RebootMode {
  if (raw.trim() === '') return 'soft';
  const accepted = 'the accepted value is empty or {"mode": "hard" | "soft", "force": true | false}';
  const softly = (why: string): RebootMode => {
    warnings.push({ field, reason: `${why}: read as a soft reboot, as Metal3 reads it (${accepted})` });
    return 'soft';
  };
  const { value, error } = decodeJson(raw);
  if (error) return softly(error);
  if (!isPlainObject(value)) return softly('is not a JSON object');
  const extra = unknownKeys(value, ['mode', 'force']);
  if (extra.length > 0) warnings.push({ field, reason: `unknown field ${extra.map((k) => JSON.stringify(k)).join(', ')} ignored (${accepted})` });
  if (value.force !== undefined && typeof value.force !== 'boolean') {
    warnings.push({ field, reason: `"force" must be true or false: ignored (${accepted})` });
  }
  if (value.mode === undefined || value.mode === 'soft') return 'soft';
  if (value.mode === 'hard') return 'hard';
  return softly(`mode ${JSON.stringify(value.mode)} is neither "hard" nor "soft"`);
}

/**
 * The detached annotation's arguments as Metal3 reads them (getDetachedAnnotation): present means
 * detached whatever the value (Metal3's docs: the value can be anything); arguments that do not
 * decode mean the default (deleteAction `delete`, no force), with a warning.
 */
function parseDetachedValue(field: string, raw: string, warnings: FieldError[]): NonNullable<HostAnnotations['detached']> {
  const byDefault = { deleteAction: 'delete' as const, force: false };
  if (raw.trim() === '') return byDefault;
  const accepted = 'arguments are empty or {"deleteAction": "delete" | "delay", "force": true | false}';
  const defaulted = (why: string) => {
    warnings.push({ field, reason: `${why}: the host is detached with deleteAction "delete" and no force, as Metal3 reads it (${accepted})` });
    return byDefault;
  };
  const { value, error } = decodeJson(raw);
  if (error) return defaulted(error);
  if (!isPlainObject(value)) return defaulted('is not a JSON object');
  if (value.force !== undefined && typeof value.force !== 'boolean') return defaulted('"force" is not true or false');
  if (value.deleteAction !== undefined && typeof value.deleteAction !== 'string') return defaulted('"deleteAction" is not a string');
  const extra = unknownKeys(value, ['deleteAction', 'force']);
  if (extra.length > 0) warnings.push({ field, reason: `unknown field ${extra.map((k) => JSON.stringify(k)).join(', ')} ignored (${accepted})` });
  const force = value.force === true;
  if (value.deleteAction === undefined || value.deleteAction === 'delete' || value.deleteAction === 'delay') {
    return { deleteAction: value.deleteAction ?? 'delete', force };
  }
  warnings.push({ field, reason: `deleteAction ${JSON.stringify(value.deleteAction)} is not "delay": read as "delete", as Metal3 reads it (${accepted})` });
  return { deleteAction: 'delete', force };
}

function parseJson(field: string, raw: string, errors: FieldError[], accepted: string): unknown {
  const { value, error } = decodeJson(raw);
  if (error) errors.push({ field, reason: `${error}: ${accepted}` });
  return value;
}

const ACCEPTED_STATUS = "must be a BareMetalHost status as JSON (Metal3's export of .status)";
const ACCEPTED_HARDWARE = 'must be status.hardware as JSON (systemVendor, firmware, ramMebibytes, nics, storage, cpu, hostname)';

export function parseAnnotations(annotations: Record<string, string> | undefined): {
  value: HostAnnotations;
  /** Values refused (Metal3's webhook or schema would refuse them too): the host is not touched. */
  errors: FieldError[];
  /** Values Metal3 reads as a default: read the same way, and said in a Warning Event. */
  warnings: FieldError[];
} {
  const a = annotations ?? {};
  const errors: FieldError[] = [];
  const warnings: FieldError[] = [];
  const value: HostAnnotations = { paused: ANNOTATIONS.paused in a, powerOff: {} };
  if (a[ANNOTATIONS.paused]) value.pausedBy = a[ANNOTATIONS.paused];
  const field = (name: string) => `metadata.annotations["${name}"]`;

  if (ANNOTATIONS.detached in a) {
    value.detached = parseDetachedValue(field(ANNOTATIONS.detached), a[ANNOTATIONS.detached]!, warnings);
  }

  if (ANNOTATIONS.status in a) {
    const json = parseJson(field(ANNOTATIONS.status), a[ANNOTATIONS.status]!, errors, ACCEPTED_STATUS);
    if (json !== undefined) {
      const parsed = metal3StatusAsGoReads(json);
      const problems = schemaErrors(HostStatusSchema, parsed, field(ANNOTATIONS.status));
      if (problems.length > 0) errors.push(...problems);
      else value.restoreStatus = parsed as HostStatus;
    }
  }

  if (ANNOTATIONS.inspect in a) {
    const raw = a[ANNOTATIONS.inspect]!;
    if (raw === 'disabled') value.inspect = 'disabled';
    else if (raw === '') value.inspect = 'requested';
    else errors.push({ field: field(ANNOTATIONS.inspect), reason: `"${raw}" is not accepted: use "disabled" to skip inspection, or an empty value to re-inspect` });
  }

  if (ANNOTATIONS.hardwareDetails in a) {
    const parsed = parseJson(field(ANNOTATIONS.hardwareDetails), a[ANNOTATIONS.hardwareDetails]!, errors, ACCEPTED_HARDWARE);
    if (parsed !== undefined) {
      const problems = schemaErrors(HardwareDetailsSchema, parsed, field(ANNOTATIONS.hardwareDetails));
      if (problems.length > 0) errors.push(...problems);
      else value.hardwareDetails = parsed as HardwareDetails;
    }
  }
  for (const [name, raw] of Object.entries(a)) {
    if (name === ANNOTATIONS.reboot) {
      value.reboot = { mode: parseRebootValue(field(name), raw, warnings) };
    } else if (name.startsWith(`${ANNOTATIONS.reboot}/`)) {
      value.powerOff[name.slice(ANNOTATIONS.reboot.length + 1)] = parseRebootValue(field(name), raw, warnings);
    }
  }
  return { value, errors, warnings };
}

/** Metal3's webhook rules between the inspect annotations and spec.inspectionMode. */
export function annotationConflicts(spec: HostSpec, a: HostAnnotations): FieldError[] {
  const field = (name: string) => `metadata.annotations["${name}"]`;
  const errors: FieldError[] = [];
  const mode = spec.inspectionMode;
  if (a.inspect === 'disabled' && mode !== undefined && mode !== 'disabled') {
    errors.push({ field: field(ANNOTATIONS.inspect), reason: `"disabled" contradicts spec.inspectionMode "${mode}"` });
  }
  if (a.inspect === 'requested' && mode === 'disabled') {
    errors.push({ field: field(ANNOTATIONS.inspect), reason: 'asks for inspection, but spec.inspectionMode is "disabled"' });
  }
  if (a.hardwareDetails && a.inspect !== 'disabled' && mode !== 'disabled') {
    errors.push({
      field: field(ANNOTATIONS.hardwareDetails),
      reason: 'is only used when inspection is disabled: add inspect.metal3.io: disabled or set spec.inspectionMode: disabled',
    });
  }
  return errors;
}
