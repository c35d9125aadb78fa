/**
 * The objects k8s/generate-crds.ts writes: the BareMetalHost and HardwareData
 * CRDs (schemas converted from model/host.ts, plus the CEL rules the schema
 * cannot say) and the ValidatingAdmissionPolicy for what CEL on a CRD cannot see.
 */
import { BMC_SCHEMES } from '../../model/bmc';
import { HardwareDetailsSchema, HostSpecSchema, HostStatusSchema, SecretReferenceSchema } from '../../model/host';
import { toStructural, type JSONSchemaProps, type ValidationRule } from './structural';

export const GROUP = 'metal3.io';
export const VERSION = 'v1alpha1';
export const GENERATED_BY = 'metalflow k8s/generate-crds.ts from model/host.ts';

// ------------------------------------------------- rules the schema lacks ----

/** Spec fields that name a Secret (found by schema identity, not by name). */
export function secretRefFields(): string[] {
  return Object.entries(HostSpecSchema.properties)
    .filter(([, schema]) => schema === SecretReferenceSchema || JSON.stringify(schema) === JSON.stringify(SecretReferenceSchema))
    .map(([name]) => name);
}

/** CEL rules added to the BareMetalHost schema, by path ('' = root). */
export const RULES: Record<string, ValidationRule[]> = {
  '': [
    {
      // Metal3's webhook: a BMC address, once set, changes only while the host is registering or detached
      // (here also before it has a state at all). A transition rule at the root: it needs the stored status.
      rule:
        "!has(oldSelf.spec) || !has(oldSelf.spec.bmc) || oldSelf.spec.bmc.address == '' || (has(self.spec) && has(self.spec.bmc) && self.spec.bmc.address == oldSelf.spec.bmc.address) || " +
        "!has(oldSelf.status) || (has(oldSelf.status.operationalStatus) && oldSelf.status.operationalStatus == 'detached') || " +
        "!has(oldSelf.status.provisioning) || oldSelf.status.provisioning.state in ['', 'unmanaged', 'registering']",
      message: 'spec.bmc.address cannot change once the host is past registering (as in Metal3, only while it is registering or detached): detach it first, or delete and create it again',
      messageExpression:
        "'spec.bmc.address cannot change while the host is ' + oldSelf.status.provisioning.state + " +
        "' (as in Metal3, only while it is registering or detached): set the baremetalhost.metal3.io/detached annotation first, or delete the host and create it again'",
      fieldPath: '.spec.bmc.address',
      reason: 'FieldValueForbidden',
    },
  ],
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
      // Metal3's webhook rule (validatePowerStatus); model/validate.ts says the same.
      rule: '!(has(self.disablePowerOff) && self.disablePowerOff) || self.online',
      message: 'disablePowerOff: true cannot be combined with online: false (a host whose power-off is disabled must stay online)',
      fieldPath: '.disablePowerOff',
      reason: 'FieldValueForbidden',
    },
    {
      // Metal3's webhook parses the MAC at admission; this is the syntax part of model/mac.ts
      // (unicast and non-zero stay with the controller, which reports them on the object).
      rule: `!has(self.bootMACAddress) || self.bootMACAddress == '' || self.bootMACAddress.matches('^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$') || self.bootMACAddress.matches('^([0-9a-fA-F]{2}-){5}[0-9a-fA-F]{2}$')`,
      message: "bootMACAddress must be six two-digit hex octets separated consistently by ':' or '-', e.g. 52:54:00:12:34:56",
      fieldPath: '.bootMACAddress',
      reason: 'FieldValueInvalid',
    },
    {
      // Metal3's webhook refuses a BMC type it does not know; a bare host[:port] is IPMI, as in Metal3.
      rule: `!has(self.bmc) || !self.bmc.address.contains('://') || self.bmc.address.lowerAscii().matches('^(${BMC_SCHEMES.map(reEscape).join('|')})://')`,
      message: `bmc.address has an unknown BMC scheme; accepted schemes: ${BMC_SCHEMES.join(', ')}`,
      // The scheme given, named as the controller's own check names it (the message above stays the fallback).
      messageExpression: `'bmc.address has an unknown BMC scheme "' + self.bmc.address.substring(0, self.bmc.address.indexOf('://')) + '"; accepted schemes: ${BMC_SCHEMES.join(', ')}'`,
      fieldPath: '.bmc.address',
      reason: 'FieldValueInvalid',
    },
  ],
};

/** A regex literal for a scheme inside a CEL string: character classes, since CEL strings refuse `\+`. */
function reEscape(s: string): string {
  return s.replace(/[^a-z0-9-]/g, (c) => `[${c}]`);
}

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

export const META_PROPS: Record<string, JSONSchemaProps> = {
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


export function crd(opts: {
  /** metal3.io unless said (metalflow's own kinds live in metalflow.io). */
  group?: string;
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  schema: JSONSchemaProps;
  status: boolean;
  columns: unknown[];
  labels?: Record<string, string>;
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
      name: `${opts.plural}.${opts.group ?? GROUP}`,
      ...(opts.labels ? { labels: opts.labels } : {}),
      annotations: { 'metalflow.io/generated-by': GENERATED_BY },
    },
    spec: {
      group: opts.group ?? GROUP,
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

/**
 * Metal3's labels for `clusterctl move`: clusterctl moves every object of a CRD labelled
 * `clusterctl.cluster.x-k8s.io` (with `/move-hierarchy`, the objects they own too), so a
 * bootstrap cluster's hosts and their HardwareData go to the target with the rest of the cluster.
 */
export const CLUSTERCTL_LABELS = { 'clusterctl.cluster.x-k8s.io': '', 'clusterctl.cluster.x-k8s.io/move-hierarchy': '' };

export function bareMetalHostCrd(): Record<string, unknown> {
  return crd({
    kind: 'BareMetalHost',
    plural: 'baremetalhosts',
    singular: 'baremetalhost',
    shortNames: ['bmh', 'bmhost'],
    schema: bareMetalHostSchema(),
    status: true,
    labels: CLUSTERCTL_LABELS,
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
    labels: CLUSTERCTL_LABELS,
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
