/**
 * Metal3's BareMetalHost annotations, parsed strictly: a value that does not
 * parse is an error to report (Event and status message), never a silent
 * default.
 */
import { HardwareDetailsSchema, HostStatusSchema, type HardwareDetails, type HostStatus } from '../../types/host';
import { schemaErrors } from '../../types/validate';
import type { FieldError } from '../../types/field-error';

export const ANNOTATIONS = {
  paused: 'baremetalhost.metal3.io/paused',
  detached: 'baremetalhost.metal3.io/detached',
  status: 'baremetalhost.metal3.io/status',
  inspect: 'inspect.metal3.io',
  hardwareDetails: 'inspect.metal3.io/hardwaredetails',
} as const;

export interface HostAnnotations {
  paused: boolean;
  detached?: { deleteAction: 'delete' | 'detach' };
  /** Status to restore instead of registering and inspecting from scratch. */
  restoreStatus?: HostStatus;
  /** `disabled` skips inspection; `requested` asks to re-inspect an available host. */
  inspect?: 'disabled' | 'requested';
  hardwareDetails?: HardwareDetails;
}

function parseJson(field: string, raw: string, errors: FieldError[]): unknown {
  try {
    return JSON.parse(raw);
  } catch (err) {
    errors.push({ field, reason: `is not valid JSON (${(err as Error).message})` });
    return undefined;
  }
}

export function parseAnnotations(annotations: Record<string, string> | undefined): { value: HostAnnotations; errors: FieldError[] } {
  const a = annotations ?? {};
  const errors: FieldError[] = [];
  const value: HostAnnotations = { paused: ANNOTATIONS.paused in a };
  const field = (name: string) => `metadata.annotations["${name}"]`;

  if (ANNOTATIONS.detached in a) {
    const raw = a[ANNOTATIONS.detached]!;
    if (raw.trim() === '') {
      value.detached = { deleteAction: 'delete' };
    } else {
      const parsed = parseJson(field(ANNOTATIONS.detached), raw, errors) as { deleteAction?: unknown } | undefined;
      if (parsed !== undefined) {
        const action = parsed?.deleteAction ?? 'delete';
        if (typeof parsed !== 'object' || parsed === null || (action !== 'delete' && action !== 'detach')) {
          errors.push({ field: field(ANNOTATIONS.detached), reason: 'must be empty or {"deleteAction": "delete" | "detach"}' });
        } else {
          value.detached = { deleteAction: action };
        }
      }
    }
  }

  if (ANNOTATIONS.status in a) {
    const parsed = parseJson(field(ANNOTATIONS.status), a[ANNOTATIONS.status]!, errors);
    if (parsed !== undefined) {
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
    const parsed = parseJson(field(ANNOTATIONS.hardwareDetails), a[ANNOTATIONS.hardwareDetails]!, errors);
    if (parsed !== undefined) {
      const problems = schemaErrors(HardwareDetailsSchema, parsed, field(ANNOTATIONS.hardwareDetails));
      if (problems.length > 0) errors.push(...problems);
      else value.hardwareDetails = parsed as HardwareDetails;
    }
  }
  return { value, errors };
}
