/**
 * TypeBox JSON Schema → Kubernetes structural schema (the conversion rules are
 * listed in k8s/generate-crds.ts). Any keyword without a translation is an
 * error, so a schema change this cannot express fails instead of silently
 * loosening the CRD.
 */
import type { TSchema } from '@sinclair/typebox';

/** A Kubernetes JSONSchemaProps (the subset we emit). */
export interface JSONSchemaProps {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  format?: string;
  properties?: Record<string, JSONSchemaProps>;
  required?: string[];
  additionalProperties?: JSONSchemaProps;
  items?: JSONSchemaProps;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  default?: unknown;
  nullable?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
  'x-kubernetes-validations'?: ValidationRule[];
}

export interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
  fieldPath?: string;
  optionalOldSelf?: boolean;
}



/** Keywords copied unchanged when present (same meaning in both dialects). */
const COPIED = ['description', 'minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'minItems', 'maxItems', 'maxProperties', 'default'] as const;
/** Keywords that carry no meaning for Kubernetes and are dropped. */
const DROPPED = new Set(['$id', '$schema', 'title', 'additionalProperties', 'properties', 'required', 'items', 'type', 'anyOf', 'const', 'enum', 'format']);
const KNOWN = new Set<string>([...COPIED, ...DROPPED]);

function fail(path: string, message: string): never {
  throw new Error(`generate-crds: ${path || '<root>'}: ${message}`);
}

/** Own string keys only: TypeBox's [Kind]/[OptionalKind] symbols never leave. */
function plain(schema: TSchema): Record<string, unknown> {
  return Object.fromEntries(Object.keys(schema).map((k) => [k, (schema as Record<string, unknown>)[k]]));
}

function copyCommon(src: Record<string, unknown>, out: JSONSchemaProps): void {
  for (const key of COPIED) {
    if (src[key] !== undefined) (out as Record<string, unknown>)[key] = src[key];
  }
}

export function toStructural(schema: TSchema, path = ''): JSONSchemaProps {
  const s = plain(schema);
  for (const key of Object.keys(s)) {
    if (!KNOWN.has(key)) fail(path, `keyword "${key}" has no structural-schema translation; extend k8s/generate-crds.ts`);
  }
  const out: JSONSchemaProps = {};

  // A schema or null → that schema, nullable (kept as null instead of pruned).
  if (Array.isArray(s.anyOf)) {
    const others = (s.anyOf as TSchema[]).filter((m) => plain(m).type !== 'null');
    if (others.length === 1 && s.anyOf.length === 2) {
      const inner = toStructural(others[0]!, path);
      copyCommon(s, inner);
      return { ...inner, nullable: true };
    }
  }
  // String or integer (Go's intstr.IntOrString, as Metal3's HostFirmwareSettings values) → int-or-string.
  if (Array.isArray(s.anyOf) && s.anyOf.length === 2) {
    const types = (s.anyOf as TSchema[]).map((m) => plain(m).type).sort();
    if (types[0] === 'integer' && types[1] === 'string') {
      copyCommon(s, out);
      return { ...out, 'x-kubernetes-int-or-string': true };
    }
  }
  // Union of literals → enum (the only union a structural schema can express).
  if (Array.isArray(s.anyOf)) {
    const members = (s.anyOf as TSchema[]).map(plain);
    if (!members.every((m) => 'const' in m)) fail(path, 'anyOf other than a union of literals cannot be structural');
    const values = members.map((m) => m.const);
    const types = new Set(values.map((v) => typeof v));
    if (types.size !== 1) fail(path, `literal union mixes types (${[...types].join(', ')})`);
    const t = [...types][0];
    if (t !== 'string' && t !== 'number' && t !== 'boolean') fail(path, `literal union of ${t}`);
    out.type = t === 'number' ? (values.every(Number.isInteger) ? 'integer' : 'number') : t;
    copyCommon(s, out);
    out.enum = values;
    return out;
  }
  if ('const' in s) {
    const t = typeof s.const;
    if (t !== 'string' && t !== 'number' && t !== 'boolean') fail(path, `literal of ${t}`);
    out.type = t as 'string' | 'number' | 'boolean';
    copyCommon(s, out);
    out.enum = [s.const];
    return out;
  }

  switch (s.type) {
    case 'object': {
      out.type = 'object';
      copyCommon(s, out);
      const props = (s.properties ?? {}) as Record<string, TSchema>;
      const names = Object.keys(props);
      const extra = s.additionalProperties;
      if (names.length === 0 && (extra === undefined || extra === true)) {
        // Open object (Metal3 fields metalflow stores but does not model).
        out['x-kubernetes-preserve-unknown-fields'] = true;
        return out;
      }
      if (names.length > 0 && extra !== undefined && extra !== false) {
        fail(path, 'an object with both properties and additionalProperties is not structural');
      }
      if (names.length === 0 && typeof extra === 'object' && extra !== null) {
        out.additionalProperties = toStructural(extra as TSchema, `${path}[*]`);
        return out;
      }
      out.properties = {};
      for (const name of names) out.properties[name] = toStructural(props[name]!, path ? `${path}.${name}` : name);
      const required = (s.required as string[] | undefined) ?? [];
      if (required.length > 0) out.required = [...required];
      return out;
    }
    case 'array':
      out.type = 'array';
      copyCommon(s, out);
      if (!s.items || Array.isArray(s.items)) fail(path, 'arrays need a single items schema');
      out.items = toStructural(s.items as TSchema, `${path}[]`);
      return out;
    case 'string':
      out.type = 'string';
      copyCommon(s, out);
      if (s.format !== undefined) fail(path, `string format "${String(s.format)}": check Kubernetes supports it, then allow it here`);
      return out;
    case 'integer':
      out.type = 'integer';
      out.format = 'int64';
      copyCommon(s, out);
      return out;
    case 'number':
      out.type = 'number';
      copyCommon(s, out);
      return out;
    case 'boolean':
      out.type = 'boolean';
      copyCommon(s, out);
      return out;
    default:
      return fail(path, `type ${JSON.stringify(s.type)} cannot be converted`);
  }
}
