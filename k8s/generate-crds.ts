/**
 * Generates the metalflow CRDs (Metal3's `BareMetalHost` and `HardwareData`,
 * group metal3.io, version v1alpha1) and the admission policy that goes with
 * them from the TypeBox schemas in types/host.ts, the single source of the
 * host model. Nothing here restates a field: the schema is converted.
 *
 *   npx tsx k8s/generate-crds.ts           write k8s/crds/*.yaml
 *   npx tsx k8s/generate-crds.ts --check   exit 1 if the committed files differ
 *   ... [--dir DIR]                        write or check DIR instead of k8s/crds
 *
 * TypeBox JSON Schema → Kubernetes structural schema:
 *   - `$id`, `$schema` and TypeBox's symbol keys ([Kind], [OptionalKind]) are dropped;
 *   - `additionalProperties: false` is omitted: a structural schema prunes (and
 *     `kubectl apply` with server-side field validation rejects) unknown fields;
 *   - an object with no properties that allows any (`passThrough`) becomes
 *     `x-kubernetes-preserve-unknown-fields: true`;
 *   - a union of literals (`anyOf` of `const`) becomes `enum`;
 *   - integers get `format: int64`, as Go's int64 fields do in Metal3's CRDs;
 *   - any other keyword is an error, so a schema change this converter cannot
 *     express fails here instead of silently loosening the CRD.
 * What the schema cannot say is added as CEL rules (`x-kubernetes-validations`)
 * and, where CEL on a CRD cannot see what it needs, as a ValidatingAdmissionPolicy
 * (also CEL, evaluated by the API server); see RULES and secretNamespacePolicy().
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TSchema } from '@sinclair/typebox';
import { HardwareDetailsSchema, HostSpecSchema, HostStatusSchema, SecretReferenceSchema } from '../types/host';

const K8S_DIR = dirname(fileURLToPath(import.meta.url));
export const CRD_DIR = join(K8S_DIR, 'crds');

export const GROUP = 'metal3.io';
export const VERSION = 'v1alpha1';

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
  default?: unknown;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
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

// ------------------------------------------------------------ converter ----

/** Keywords copied unchanged when present (same meaning in both dialects). */
const COPIED = ['description', 'minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'minItems', 'maxItems', 'default'] as const;
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

// ------------------------------------------------- rules the schema lacks ----

/** Spec fields that name a Secret (found by schema identity, not by name). */
export function secretRefFields(): string[] {
  return Object.entries(HostSpecSchema.properties)
    .filter(([, schema]) => schema === SecretReferenceSchema || JSON.stringify(schema) === JSON.stringify(SecretReferenceSchema))
    .map(([name]) => name);
}

/** CEL rules added to the BareMetalHost schema, by path ('' = root). */
export const RULES: Record<string, ValidationRule[]> = {
  spec: [
    {
      // A transition rule: only evaluated on update. Metal3's webhook refuses
      // the same change ("bootMACAddress can not be changed once it is set").
      rule: '!has(oldSelf.bootMACAddress) || (has(self.bootMACAddress) && self.bootMACAddress == oldSelf.bootMACAddress)',
      message: 'bootMACAddress cannot be changed or removed once set',
      fieldPath: '.bootMACAddress',
      reason: 'FieldValueForbidden',
    },
    {
      // Metal3's webhook rule (validatePowerStatus); types/validate.ts says the same.
      rule: '!(has(self.disablePowerOff) && self.disablePowerOff) || self.online',
      message: 'disablePowerOff: true cannot be combined with online: false (a host whose power-off is disabled must stay online)',
      fieldPath: '.disablePowerOff',
      reason: 'FieldValueForbidden',
    },
  ],
};

/** x-kubernetes-map-type: atomic, as Metal3's CRD marks references. */
const ATOMIC = ['spec.consumerRef', ...secretRefFields().map((f) => `spec.${f}`)];

function at(root: JSONSchemaProps, path: string): JSONSchemaProps {
  let node = root;
  for (const part of path ? path.split('.') : []) {
    const next = node.properties?.[part];
    if (!next) throw new Error(`generate-crds: no property ${path} in the schema (rule or overlay out of date)`);
    node = next;
  }
  return node;
}

// ------------------------------------------------------------- objects ----

const META_PROPS: Record<string, JSONSchemaProps> = {
  apiVersion: {
    type: 'string',
    description:
      'APIVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources',
  },
  kind: {
    type: 'string',
    description:
      'Kind is a string value representing the REST resource this object represents. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds',
  },
  metadata: { type: 'object' },
};

export function bareMetalHostSchema(): JSONSchemaProps {
  const spec = toStructural(HostSpecSchema, 'spec');
  spec.description ??= 'BareMetalHostSpec defines the desired state of BareMetalHost (Metal3 field-compatible).';
  const status = toStructural(HostStatusSchema, 'status');
  status.description ??= 'BareMetalHostStatus defines the observed state of BareMetalHost; written by metalflow.';
  const root: JSONSchemaProps = {
    type: 'object',
    description: 'BareMetalHost is the Schema for the baremetalhosts API',
    properties: { ...META_PROPS, spec, status },
  };
  for (const path of ATOMIC) at(root, path)['x-kubernetes-map-type'] = 'atomic';
  for (const [path, rules] of Object.entries(RULES)) {
    const node = at(root, path);
    node['x-kubernetes-validations'] = [...(node['x-kubernetes-validations'] ?? []), ...rules];
  }
  return root;
}

export function hardwareDataSchema(): JSONSchemaProps {
  const hardware = toStructural(HardwareDetailsSchema, 'spec.hardware');
  hardware.description ??= 'The discovered Hardware.';
  return {
    type: 'object',
    description: 'HardwareData is the Schema for the hardwaredata API',
    properties: {
      ...META_PROPS,
      spec: {
        type: 'object',
        description: 'HardwareDataSpec defines the desired state of HardwareData.',
        properties: { hardware },
      },
    },
  };
}

const GENERATED_BY = 'metalflow k8s/generate-crds.ts from types/host.ts';

function crd(opts: {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  schema: JSONSchemaProps;
  status: boolean;
  columns: unknown[];
}): Record<string, unknown> {
  const version: Record<string, unknown> = {
    name: VERSION,
    served: true,
    storage: true,
  };
  if (opts.columns.length > 0) version.additionalPrinterColumns = opts.columns;
  version.schema = { openAPIV3Schema: opts.schema };
  if (opts.status) version.subresources = { status: {} };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${opts.plural}.${GROUP}`,
      annotations: { 'metalflow.io/generated-by': GENERATED_BY },
    },
    spec: {
      group: GROUP,
      names: {
        kind: opts.kind,
        listKind: `${opts.kind}List`,
        plural: opts.plural,
        singular: opts.singular,
        ...(opts.shortNames.length > 0 ? { shortNames: opts.shortNames } : {}),
      },
      scope: 'Namespaced',
      versions: [version],
    },
  };
}

export function bareMetalHostCrd(): Record<string, unknown> {
  return crd({
    kind: 'BareMetalHost',
    plural: 'baremetalhosts',
    singular: 'baremetalhost',
    shortNames: ['bmh', 'bmhost'],
    schema: bareMetalHostSchema(),
    status: true,
    // Metal3's columns: `kubectl get bmh` shows STATE CONSUMER ONLINE ERROR AGE
    // (STATUS and BMC with -o wide).
    columns: [
      { name: 'Status', type: 'string', description: 'Operational status', jsonPath: '.status.operationalStatus', priority: 1 },
      { name: 'State', type: 'string', description: 'Provisioning status', jsonPath: '.status.provisioning.state' },
      { name: 'Consumer', type: 'string', description: 'Consumer using this host', jsonPath: '.spec.consumerRef.name' },
      { name: 'BMC', type: 'string', description: 'Address of management controller', jsonPath: '.spec.bmc.address', priority: 1 },
      { name: 'Online', type: 'string', description: 'Whether the host is online or not', jsonPath: '.spec.online' },
      { name: 'Error', type: 'string', description: 'Type of the most recent error', jsonPath: '.status.errorType' },
      { name: 'Age', type: 'date', description: 'Time duration since creation of BaremetalHost', jsonPath: '.metadata.creationTimestamp' },
    ],
  });
}

export function hardwareDataCrd(): Record<string, unknown> {
  return crd({
    kind: 'HardwareData',
    plural: 'hardwaredata',
    singular: 'hardwaredata',
    shortNames: ['hd'],
    schema: hardwareDataSchema(),
    status: false,
    columns: [{ name: 'Age', type: 'date', description: 'Time duration since creation of HardwareData', jsonPath: '.metadata.creationTimestamp' }],
  });
}

export const POLICY_NAME = 'baremetalhost-secret-namespace.metalflow.io';

/**
 * "A userData/networkData/metaData Secret must be in the host's namespace."
 * CEL inside a CRD schema sees only metadata.name and metadata.generateName
 * (the API server rejects a rule using self.metadata.namespace: "undefined
 * field 'namespace'"), so this rule is a ValidatingAdmissionPolicy, which
 * is CEL too and sees the request's namespace. Requires the API server's
 * ValidatingAdmissionPolicy admission plugin (on by default since 1.30).
 */
export function secretNamespacePolicy(): Record<string, unknown>[] {
  const fields = secretRefFields();
  return [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: POLICY_NAME, annotations: { 'metalflow.io/generated-by': GENERATED_BY } },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            { apiGroups: [GROUP], apiVersions: [VERSION], operations: ['CREATE', 'UPDATE'], resources: ['baremetalhosts'] },
          ],
        },
        validations: fields.map((f) => ({
          expression:
            `!has(object.spec.${f}) || !has(object.spec.${f}.namespace) || ` +
            `object.spec.${f}.namespace == '' || object.spec.${f}.namespace == request.namespace`,
          messageExpression:
            `'spec.${f}.namespace: the Secret must be in the host\\'s namespace "' + request.namespace + ` +
            `'", not "' + object.spec.${f}.namespace + '"'`,
          reason: 'Invalid',
        })),
      },
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: POLICY_NAME, annotations: { 'metalflow.io/generated-by': GENERATED_BY } },
      spec: { policyName: POLICY_NAME, validationActions: ['Deny'] },
    },
  ];
}

// ------------------------------------------------------------------ YAML ----

const YAML_WORDS = /^(?:true|false|yes|no|on|off|y|n|null|~)$/i;
const PLAIN = /^[A-Za-z_/][A-Za-z0-9_ ./()'-]*$/;

function scalar(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return String(v);
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error(`generate-crds: cannot emit ${v}`);
    return String(v);
  }
  if (typeof v === 'string') {
    // Plain only when unambiguous; otherwise a JSON string, which is a valid
    // YAML double-quoted scalar.
    if (v !== '' && PLAIN.test(v) && !YAML_WORDS.test(v) && !v.endsWith(' ') && !/ #|: /.test(v)) return v;
    return JSON.stringify(v);
  }
  throw new Error(`generate-crds: cannot emit ${typeof v}`);
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function emit(v: unknown, indent: string, lines: string[]): void {
  if (Array.isArray(v)) {
    for (const item of v) {
      if ((isObj(item) && Object.keys(item).length > 0) || (Array.isArray(item) && item.length > 0)) {
        const sub: string[] = [];
        emit(item, `${indent}  `, sub);
        lines.push(`${indent}- ${sub[0]!.slice(indent.length + 2)}`, ...sub.slice(1));
      } else {
        lines.push(`${indent}- ${inline(item)}`);
      }
    }
    return;
  }
  if (isObj(v)) {
    for (const [k, val] of Object.entries(v)) {
      if (val === undefined) continue;
      const key = scalar(k);
      if ((isObj(val) && Object.keys(val).length > 0) || (Array.isArray(val) && val.length > 0)) {
        lines.push(`${indent}${key}:`);
        emit(val, Array.isArray(val) ? indent : `${indent}  `, lines);
      } else {
        lines.push(`${indent}${key}: ${inline(val)}`);
      }
    }
    return;
  }
  lines.push(`${indent}${scalar(v)}`);
}

function inline(v: unknown): string {
  if (Array.isArray(v)) return '[]';
  if (isObj(v)) return '{}';
  return scalar(v);
}

/** YAML for one or more documents (block style; every string safely quoted). */
export function toYaml(docs: unknown[]): string {
  return docs
    .map((doc) => {
      const lines: string[] = [];
      emit(doc, '', lines);
      return `---\n# Generated by ${GENERATED_BY}; do not edit.\n${lines.join('\n')}\n`;
    })
    .join('');
}

// ------------------------------------------------------------------ main ----

export function generatedFiles(dir = CRD_DIR): Record<string, string> {
  return {
    [join(dir, `${GROUP}_baremetalhosts.yaml`)]: toYaml([bareMetalHostCrd()]),
    [join(dir, `${GROUP}_hardwaredata.yaml`)]: toYaml([hardwareDataCrd()]),
    [join(dir, `${GROUP}_baremetalhosts_policy.yaml`)]: toYaml(secretNamespacePolicy()),
  };
}

function main(argv: string[]): number {
  let check = false;
  let dir = CRD_DIR;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--check') check = true;
    else if (arg === '--dir' && argv[i + 1] !== undefined) dir = resolve(argv[++i]!);
    else {
      console.error(`generate-crds: unexpected argument ${arg} (usage: generate-crds.ts [--check] [--dir DIR])`);
      return 2;
    }
  }
  const repo = join(K8S_DIR, '..');
  let stale = 0;
  for (const [file, text] of Object.entries(generatedFiles(dir))) {
    const rel = relative(repo, file);
    let current: string | undefined;
    try {
      current = readFileSync(file, 'utf8');
    } catch {
      current = undefined;
    }
    if (current === text) {
      console.log(`generate-crds: ${rel} up to date`);
      continue;
    }
    if (check) {
      console.error(`generate-crds: ${rel} ${current === undefined ? 'is missing' : 'differs from types/host.ts'}; run: npx tsx k8s/generate-crds.ts`);
      stale++;
    } else {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, text);
      console.log(`generate-crds: wrote ${rel}`);
    }
  }
  return stale > 0 ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  process.exitCode = main(process.argv.slice(2));
}
