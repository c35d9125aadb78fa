/**
 * Metal3 IP Address Manager's CRDs (`ipam.metal3.io/v1alpha1` IPPool,
 * IPClaim, IPAddress), converted from model/ipam.ts with Metal3's names,
 * short names, categories and printer columns, so its manifests apply
 * unchanged. Metal3 checks addresses with long regular expressions and a
 * webhook; here CEL's Kubernetes IP library (isIP, isCIDR, cidr().containsIP)
 * says the same at admission. What CEL cannot compare (start ≤ end, a
 * preAllocation inside the ranges) is the controller's (model/ipam-validate.ts).
 */
import { IPAddressSpecSchema, IPAM, IPClaimSpecSchema, IPClaimStatusSchema, IPPoolSpecSchema, IPPoolStatusSchema } from '../../model/ipam';
import { crd, META_PROPS } from './objects';
import { toStructural, type JSONSchemaProps, type ValidationRule } from './structural';

const ipRule = (field: string): ValidationRule => ({
  rule: `!has(self.${field}) || isIP(self.${field})`,
  message: `${field} must be an IPv4 or IPv6 address`,
  fieldPath: `.${field}`,
  reason: 'FieldValueInvalid',
});
const dnsRule: ValidationRule = { rule: '!has(self.dnsServers) || self.dnsServers.all(a, isIP(a))', message: 'dnsServers must be IPv4 or IPv6 addresses', fieldPath: '.dnsServers', reason: 'FieldValueInvalid' };

/** The rules every object with prefix/gateway/dnsServers gets. */
const addressing = (node: JSONSchemaProps, more: ValidationRule[] = []): JSONSchemaProps => ({ ...node, 'x-kubernetes-validations': [ipRule('gateway'), dnsRule, ...more] });

const REFS = ['pool', 'claim', 'address'];
function atomicRefs(node: JSONSchemaProps): JSONSchemaProps {
  for (const r of REFS) if (node.properties?.[r]?.type === 'object') node.properties[r]['x-kubernetes-map-type'] = 'atomic';
  return node;
}

function root(kind: string, props: Record<string, JSONSchemaProps>): JSONSchemaProps {
  return { type: 'object', description: `${kind} is the Schema for the ${kind.toLowerCase()}s API (Metal3 IP Address Manager)`, properties: { ...META_PROPS, ...props } };
}

export function ipPoolSchema(): JSONSchemaProps {
  const spec = addressing(toStructural(IPPoolSpecSchema, 'spec'), [
    { rule: '!has(self.preAllocations) || self.preAllocations.all(k, isIP(self.preAllocations[k]))', message: 'preAllocations must map claim names to IPv4 or IPv6 addresses', fieldPath: '.preAllocations', reason: 'FieldValueInvalid' },
  ]);
  const range = spec.properties!.pools!.items!;
  spec.properties!.pools!.items = addressing(range, [
    ipRule('start'),
    ipRule('end'),
    { rule: '!has(self.subnet) || isCIDR(self.subnet)', message: 'subnet must be a subnet in CIDR notation, e.g. 192.168.0.0/24', fieldPath: '.subnet', reason: 'FieldValueInvalid' },
    { rule: 'has(self.start) || has(self.subnet)', message: 'a range needs start or subnet', reason: 'FieldValueRequired' },
    {
      rule: '!has(self.start) || !has(self.subnet) || !isIP(self.start) || !isCIDR(self.subnet) || cidr(self.subnet).containsIP(self.start)',
      message: 'start must be inside subnet',
      fieldPath: '.start',
      reason: 'FieldValueInvalid',
    },
    {
      rule: '!has(self.end) || !has(self.subnet) || !isIP(self.end) || !isCIDR(self.subnet) || cidr(self.subnet).containsIP(self.end)',
      message: 'end must be inside subnet',
      fieldPath: '.end',
      reason: 'FieldValueInvalid',
    },
  ]);
  return root('IPPool', { spec, status: toStructural(IPPoolStatusSchema, 'status') });
}

export function ipPoolCrd(): Record<string, unknown> {
  return withCategory(
    crd({
      group: IPAM.group,
      kind: 'IPPool',
      plural: 'ippools',
      singular: 'ippool',
      shortNames: ['ipp', 'ippool', 'm3ipp', 'm3ippool', 'm3ippools', 'metal3ipp', 'metal3ippool', 'metal3ippools'],
      schema: ipPoolSchema(),
      status: true,
      columns: [
        { name: 'Cluster', type: 'string', description: 'Cluster to which this template belongs', jsonPath: '.metadata.labels.cluster\\.x-k8s\\.io/cluster-name' },
        { name: 'Age', type: 'date', description: 'Time duration since creation of Metal3IPPool', jsonPath: '.metadata.creationTimestamp' },
      ],
    }),
    'cluster-api',
  );
}

export function ipClaimCrd(): Record<string, unknown> {
  return withCategory(
    crd({
      group: IPAM.group,
      kind: 'IPClaim',
      plural: 'ipclaims',
      singular: 'ipclaim',
      shortNames: ['ipc', 'ipclaim', 'm3ipc', 'm3ipclaim', 'm3ipclaims', 'metal3ipc', 'metal3ipclaim', 'metal3ipclaims'],
      schema: root('IPClaim', { spec: atomicRefs(toStructural(IPClaimSpecSchema, 'spec')), status: atomicRefs(toStructural(IPClaimStatusSchema, 'status')) }),
      status: true,
      columns: [{ name: 'Age', type: 'date', description: 'Time duration since creation of Metal3IPClaim', jsonPath: '.metadata.creationTimestamp' }],
    }),
    'cluster-api',
  );
}

export function ipAddressCrd(): Record<string, unknown> {
  const spec = atomicRefs(addressing(toStructural(IPAddressSpecSchema, 'spec'), [ipRule('address')]));
  return withCategory(
    crd({
      group: IPAM.group,
      kind: 'IPAddress',
      plural: 'ipaddresses',
      singular: 'ipaddress',
      shortNames: ['ipa', 'ipaddress', 'm3ipa', 'm3ipaddress', 'm3ipaddresses', 'metal3ipa', 'metal3ipaddress', 'metal3ipaddresses'],
      schema: root('IPAddress', { spec }),
      status: false,
      columns: [{ name: 'Age', type: 'date', description: 'Time duration since creation of Metal3IPAddress', jsonPath: '.metadata.creationTimestamp' }],
    }),
    'metal3',
  );
}

/** Metal3's categories (`kubectl get cluster-api` lists pools and claims). */
function withCategory(obj: Record<string, unknown>, category: string): Record<string, unknown> {
  const spec = obj.spec as { names: Record<string, unknown> };
  spec.names = { categories: [category], ...spec.names };
  return obj;
}
