/**
 * Stands in for model/validate.ts in a workflow bundle built by
 * tightened-bundle.ts: the same module, except that validateHostSpec refuses
 * every spec, the strictest rule a later version could bring. A host workflow
 * whose update handler re-validates what its validator once accepted cannot
 * replay its history under it.
 */
import { validateHostSpec as current } from '../../model/validate';
import type { Result } from '../../model/field-error';
import type { HostRef } from '../../model/host';
import type { ValidatedSpec } from '../../model/validate';

export * from '../../model/validate';

export const TIGHTENED_REASON = 'refused by a validation rule added after this history was recorded';

export function validateHostSpec(host: HostRef, input: unknown): Result<ValidatedSpec> {
  const valid = current(host, input);
  return valid.ok ? { ok: false, errors: [{ field: 'spec', reason: TIGHTENED_REASON }] } : valid;
}
