/**
 * Metal3's BareMetalHost annotations, parsed strictly: a value that does not
 * parse is an error to report (Event and status message), never a silent
 * default.
 */
import { HardwareDetailsSchema, HostStatusSchema, type HardwareDetails, type HostSpec, type HostStatus } from '../../types/host';
import { schemaErrors } from '../../types/validate';
import type { FieldError } from '../../types/field-error';
import type { RebootMode } from '../../workflows/power-requests';

export const ANNOTATIONS = {
  paused: 'baremetalhost.metal3.io/paused',
  detached: 'baremetalhost.metal3.io/detached',
  status: 'baremetalhost.metal3.io/status',
  inspect: 'inspect.metal3.io',
  hardwareDetails: 'inspect.metal3.io/hardwaredetails',
  /** One-shot reboot; `reboot.metal3.io/<key>` keeps the host off until removed. */
  reboot: 'reboot.metal3.io',
} as const;

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

/**
 * A reboot annotation's value, as Metal3 reads it (RebootAnnotationArguments): empty, or JSON
 * `{"mode": "hard" | "soft", "force": bool}`. Unlike Metal3, which reads a value it cannot
 * parse as soft, a bad value is an error: a hard reboot request must never become a soft one.
 */
function parseRebootValue(field: string, raw: string, errors: FieldError[]): RebootMode | undefined {
  if (raw.trim() === '') return 'soft';
  const accepted = 'must be empty or {"mode": "hard" | "soft"} (optionally with "force": true|false)';
  const parsed = parseJson(field, raw, errors, accepted);
  if (parsed === undefined) return undefined;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    errors.push({ field, reason: accepted });
    return undefined;
  }
  const o = parsed as Record<string, unknown>;
  const unknown = Object.keys(o).filter((k) => k !== 'mode' && k !== 'force');
  if (unknown.length > 0) {
    errors.push({ field, reason: `unknown field ${unknown.map((k) => JSON.stringify(k)).join(', ')}: ${accepted}` });
    return undefined;
  }
  if (o.force !== undefined && typeof o.force !== 'boolean') {
    errors.push({ field, reason: `"force" must be true or false: ${accepted}` });
    return undefined;
  }
  if (o.mode === undefined) return 'soft';
  if (o.mode !== 'hard' && o.mode !== 'soft') {
    errors.push({ field, reason: `mode ${JSON.stringify(o.mode)} is not accepted: use "hard" or "soft"` });
    return undefined;
  }
  return o.mode;
}

/** JSON or an error that says what the annotation takes (`accepted`). */
function parseJson(field: string, raw: string, errors: FieldError[], accepted: string): unknown {
  try {
    return JSON.parse(raw);
  } catch (err) {
    errors.push({ field, reason: `is not valid JSON (${(err as Error).message}): ${accepted}` });
    return undefined;
  }
}

const ACCEPTED_STATUS = "must be a BareMetalHost status as JSON (Metal3's export of .status)";
const ACCEPTED_HARDWARE = 'must be status.hardware as JSON (systemVendor, firmware, ramMebibytes, nics, storage, cpu, hostname)';
const ACCEPTED_DETACHED = 'must be empty or a JSON object {"deleteAction": "delete" | "delay", "force": true | false} (both optional)';

/** JSON null is Go's zero value: drop it, as Metal3's decoding does (its exported statuses carry `"end": null`). */
function withoutNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutNulls);
  if (typeof v !== 'object' || v === null) return v;
  return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null).map(([k, x]) => [k, withoutNulls(x)]));
}

/**
 * A status as Metal3 writes it, read the way Metal3 reads it: nulls and
 * omitted fields are zero values, and an image with an empty URL is no image.
 */
function asGoDecodes(json: unknown): unknown {
  const v = withoutNulls(json);
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
  const st = v as Record<string, unknown>;
  const history = (typeof st.operationHistory === 'object' && st.operationHistory !== null ? st.operationHistory : {}) as Record<string, unknown>;
  const out: Record<string, unknown> = {
    errorMessage: '',
    errorCount: 0,
    poweredOn: false,
    ...st,
    operationHistory: { register: {}, inspect: {}, provision: {}, deprovision: {}, ...history },
  };
  const prov = out.provisioning as { image?: { url?: unknown } } | undefined;
  if (prov && typeof prov === 'object' && prov.image && prov.image.url === '') {
    const { image: _empty, ...rest } = prov;
    out.provisioning = rest;
  }
  return out;
}

export function parseAnnotations(annotations: Record<string, string> | undefined): { value: HostAnnotations; errors: FieldError[] } {
  const a = annotations ?? {};
  const errors: FieldError[] = [];
  const value: HostAnnotations = { paused: ANNOTATIONS.paused in a, powerOff: {} };
  if (a[ANNOTATIONS.paused]) value.pausedBy = a[ANNOTATIONS.paused];
  const field = (name: string) => `metadata.annotations["${name}"]`;

  if (ANNOTATIONS.detached in a) {
    const raw = a[ANNOTATIONS.detached]!;
    if (raw.trim() === '') {
      value.detached = { deleteAction: 'delete', force: false };
    } else {
      const parsed = parseJson(field(ANNOTATIONS.detached), raw, errors, ACCEPTED_DETACHED);
      if (parsed !== undefined) {
        const args = parsed as { deleteAction?: unknown; force?: unknown };
        const isObject = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
        const unknown = isObject ? Object.keys(parsed).filter((k) => k !== 'deleteAction' && k !== 'force') : [];
        const action = isObject ? (args.deleteAction ?? 'delete') : undefined;
        const force = isObject ? (args.force ?? false) : undefined;
        if (!isObject || unknown.length > 0 || (action !== 'delete' && action !== 'delay') || typeof force !== 'boolean') {
          errors.push({ field: field(ANNOTATIONS.detached), reason: ACCEPTED_DETACHED });
        } else {
          value.detached = { deleteAction: action, force };
        }
      }
    }
  }

  if (ANNOTATIONS.status in a) {
    const json = parseJson(field(ANNOTATIONS.status), a[ANNOTATIONS.status]!, errors, ACCEPTED_STATUS);
    if (json !== undefined) {
      const parsed = asGoDecodes(json);
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
      const mode = parseRebootValue(field(name), raw, errors);
      if (mode) value.reboot = { mode };
    } else if (name.startsWith(`${ANNOTATIONS.reboot}/`)) {
      const mode = parseRebootValue(field(name), raw, errors);
      if (mode) value.powerOff[name.slice(ANNOTATIONS.reboot.length + 1)] = mode;
    }
  }
  return { value, errors };
}

/** Rules that need the spec too: keyed power-off requests cannot hold a host whose power must never go off. */
export function annotationSpecErrors(value: HostAnnotations, spec: { disablePowerOff?: boolean }): FieldError[] {
  if (!spec.disablePowerOff) return [];
  return Object.keys(value.powerOff).map((key) => ({
    field: `metadata.annotations["${ANNOTATIONS.reboot}/${key}"]`,
    reason: 'spec.disablePowerOff is set: this host is never powered off, so it cannot be held off; use reboot.metal3.io (one reboot) instead',
  }));
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
