/**
 * Kubernetes labels and label selectors (`matchLabels`, `matchExpressions`):
 * the rules the API server applies to `metadata.labels`, and matching, so API
 * hosts and fleet operations select the way `kubectl get -l` does.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { FieldError } from './field-error';

/** A label name, and a non-empty value: 1-63 alphanumerics, `-`, `_`, `.`, alphanumeric at both ends. */
const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export const MAX_LABELS = 64;

export const LabelsSchema = Type.Record(Type.String({ maxLength: 317 }), Type.String({ maxLength: 63 }), {
  description: 'Kubernetes labels: keys [prefix/]name (prefix a DNS subdomain of at most 253 characters, name 1-63), values at most 63 characters',
});
export type Labels = Static<typeof LabelsSchema>;

export const LABEL_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;
export type LabelOperator = (typeof LABEL_OPERATORS)[number];

export const LabelSelectorSchema = Type.Object(
  {
    matchLabels: Type.Optional(LabelsSchema),
    matchExpressions: Type.Optional(
      Type.Array(
        Type.Object(
          {
            key: Type.String({ maxLength: 317 }),
            operator: Type.Union(LABEL_OPERATORS.map((o) => Type.Literal(o))),
            values: Type.Optional(Type.Array(Type.String({ maxLength: 63 }), { maxItems: 256 })),
          },
          { additionalProperties: false },
        ),
        { maxItems: 64 },
      ),
    ),
  },
  { additionalProperties: false, description: 'Kubernetes label selector: every matchLabels pair and every expression must hold' },
);
export type LabelSelector = Static<typeof LabelSelectorSchema>;

/** Why a label key is not one, or undefined. */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) {
    return 'has a prefix that is not a DNS subdomain (lower case, at most 253 characters) before its "/"';
  }
  if (!NAME.test(name)) return 'must be [prefix/]name, the name 1-63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit';
  return undefined;
}

/** Why a label value is not one, or undefined (the empty value is allowed). */
export function labelValueProblem(value: string): string | undefined {
  if (value === '' || NAME.test(value)) return undefined;
  return 'must be empty or 1-63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit';
}

export function validateLabels(labels: Record<string, string>, field: string): FieldError[] {
  const errors: FieldError[] = [];
  const keys = Object.keys(labels);
  if (keys.length > MAX_LABELS) errors.push({ field, reason: `has ${keys.length} labels; at most ${MAX_LABELS} are accepted` });
  for (const key of keys) {
    // Reasons never quote the key: it is the caller's, and the field names it.
    const keyProblem = labelKeyProblem(key);
    if (keyProblem) errors.push({ field: `${field}.${key}`, reason: `label key ${keyProblem}` });
    const value = labels[key];
    const valueProblem = typeof value === 'string' ? labelValueProblem(value) : 'must be a string';
    if (valueProblem) errors.push({ field: `${field}.${key}`, reason: `label value ${valueProblem}` });
  }
  return errors;
}

/** Rules the schema cannot say: key and value syntax, and `values` as each operator wants them. */
export function validateLabelSelector(selector: LabelSelector, field: string): FieldError[] {
  const errors = validateLabels(selector.matchLabels ?? {}, `${field}.matchLabels`);
  (selector.matchExpressions ?? []).forEach((e, i) => {
    const at = `${field}.matchExpressions[${i}]`;
    const keyProblem = labelKeyProblem(e.key);
    if (keyProblem) errors.push({ field: `${at}.key`, reason: `label key ${keyProblem}` });
    const values = e.values ?? [];
    if ((e.operator === 'In' || e.operator === 'NotIn') && values.length === 0) {
      errors.push({ field: `${at}.values`, reason: `must name at least one value with operator ${e.operator}` });
    }
    if ((e.operator === 'Exists' || e.operator === 'DoesNotExist') && values.length > 0) {
      errors.push({ field: `${at}.values`, reason: `must be empty with operator ${e.operator}` });
    }
    values.forEach((v, j) => {
      const problem = labelValueProblem(v);
      if (problem) errors.push({ field: `${at}.values[${j}]`, reason: `label value ${problem}` });
    });
  });
  return errors;
}

/** Does a host with these labels match? An empty selector matches everything, as in Kubernetes. */
export function matchesLabelSelector(labels: Record<string, string> | undefined, selector: LabelSelector): boolean {
  const have = labels ?? {};
  const has = (key: string): boolean => Object.prototype.hasOwnProperty.call(have, key);
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (!has(key) || have[key] !== value) return false;
  }
  for (const e of selector.matchExpressions ?? []) {
    const values = e.values ?? [];
    const ok =
      e.operator === 'In' ? has(e.key) && values.includes(have[e.key]!)
      : e.operator === 'NotIn' ? !has(e.key) || !values.includes(have[e.key]!)
      : e.operator === 'Exists' ? has(e.key)
      : !has(e.key);
    if (!ok) return false;
  }
  return true;
}
