/**
 * A validation problem tied to one field of the input, so every layer (API 400s,
 * workflow update rejections, CRD status messages) can say exactly what is wrong.
 */
export interface FieldError {
  /** Dotted path into the host document, e.g. `spec.bmc.address`. */
  field: string;
  /** What is wrong and what is accepted instead. */
  reason: string;
}

export type Result<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

export const ok = <T>(value: T): Result<T> => ({ ok: true, value });
export const fail = <T = never>(field: string, reason: string): Result<T> => ({
  ok: false,
  errors: [{ field, reason }],
});

export function formatFieldErrors(errors: readonly FieldError[]): string {
  return errors.map((e) => `${e.field}: ${e.reason}`).join('; ');
}
