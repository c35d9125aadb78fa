/**
 * Metal3's IP Address Manager API (`ipam.metal3.io/v1alpha1`): `IPPool`,
 * `IPClaim` and `IPAddress`, with Metal3's field names, so its manifests
 * apply unchanged. One TypeBox schema per part gives the TS types, the API's
 * request validation and the CRDs (k8s/crd-gen/ipam-objects.ts); what a
 * schema cannot say (addresses that parse, ranges inside their subnet,
 * preAllocations inside the pools) is model/ipam-validate.ts.
 */
import { Type, type Static } from '@sinclair/typebox';
import { MAX_LENGTH, ObjectReferenceSchema } from './host';

export const IPAM = { group: 'ipam.metal3.io', version: 'v1alpha1' } as const;
export const IPAM_API_VERSION = `${IPAM.group}/${IPAM.version}`;

/** Metal3's finalizers: a claim keeps its address until released; a pool stays while it has allocations. */
export const IPCLAIM_FINALIZER = 'ipclaim.ipam.metal3.io';
export const IPPOOL_FINALIZER = 'ippool.ipam.metal3.io';
export const IPADDRESS_FINALIZER = 'ipaddress.ipam.metal3.io';
/** Metal3's annotation on a claim asking for one address of the pool. */
export const REQUESTED_IP_ANNOTATION = 'ipAddress';

/** The longest textual IPv6 address (with an embedded IPv4 tail) is 45 characters. */
const IP_MAX = 45;
/** Limits Metal3's CRDs do not set; here so the API server can bound the cost of the CEL address checks. */
export const IPAM_LIMITS = { pools: 256, dnsServers: 16, preAllocations: 4096 } as const;

/** A map of names to addresses (a structural schema: an object whose additionalProperties say the value). */
const addressMap = (options: { description: string; maxProperties?: number }) =>
  Type.Unsafe<Record<string, string>>({ ...Type.Object({}, { additionalProperties: IpAddressStringSchema, ...options }) });

export const IpAddressStringSchema = Type.String({ maxLength: IP_MAX, description: 'An IPv4 or IPv6 address' });
const SubnetSchema = Type.String({ maxLength: IP_MAX + 4, description: 'An IPv4 or IPv6 subnet in CIDR notation, e.g. 192.168.0.0/24' });
const PrefixSchema = Type.Integer({ minimum: 0, maximum: 128, description: 'The mask of the network as an integer (at most 32 for IPv4, 128 for IPv6)' });
const DnsServersSchema = Type.Array(IpAddressStringSchema, { maxItems: IPAM_LIMITS.dnsServers, description: 'The DNS servers' });

export const IpRangeSchema = Type.Object(
  {
    start: Type.Optional({ ...IpAddressStringSchema, description: 'The first address handed out (without it: the subnet address + 1)' }),
    end: Type.Optional({ ...IpAddressStringSchema, description: 'The last address handed out (without it: the end of the subnet)' }),
    subnet: Type.Optional({ ...SubnetSchema, description: 'Bounds the range; without start the range begins at the subnet address + 1' }),
    prefix: Type.Optional({ ...PrefixSchema, description: 'The prefix of addresses from this range (overrides spec.prefix)' }),
    gateway: Type.Optional({ ...IpAddressStringSchema, description: 'The gateway of addresses from this range (overrides spec.gateway)' }),
    dnsServers: Type.Optional({ ...DnsServersSchema, description: 'The DNS servers of addresses from this range (override spec.dnsServers)' }),
  },
  { additionalProperties: false, description: 'A range of addresses (Metal3 calls it Pool)' },
);
export type IpRange = Static<typeof IpRangeSchema>;

export const ALLOCATION_STRATEGIES = ['sequential', 'random'] as const;

export const IPPoolSpecSchema = Type.Object(
  {
    clusterName: Type.Optional(Type.String({ maxLength: MAX_LENGTH.name, description: 'The Cluster this pool belongs to' })),
    pools: Type.Optional(Type.Array(IpRangeSchema, { maxItems: IPAM_LIMITS.pools, description: 'The ranges, used in order: one is exhausted before the next is used' })),
    allocationStrategy: Type.Optional(
      Type.Union(ALLOCATION_STRATEGIES.map((s) => Type.Literal(s)), { description: 'sequential (default): the first free address; random: a random free one' }),
    ),
    preAllocations: Type.Optional(
      addressMap({ maxProperties: IPAM_LIMITS.preAllocations, description: 'Claim name → the address that claim gets; reserved for it' }),
    ),
    prefix: Type.Optional(PrefixSchema),
    gateway: Type.Optional({ ...IpAddressStringSchema, description: 'The gateway address' }),
    dnsServers: Type.Optional(DnsServersSchema),
    namePrefix: Type.String({ minLength: 1, maxLength: 200, description: 'IPAddress objects are named <namePrefix>-<address with . and : as ->' }),
  },
  { additionalProperties: false, description: 'IPPoolSpec (Metal3 field-compatible)' },
);
export type IPPoolSpec = Static<typeof IPPoolSpecSchema>;

export const IPPoolStatusSchema = Type.Object(
  {
    lastUpdated: Type.Optional(Type.String({ maxLength: 64, description: 'When the allocations last changed (RFC 3339)' })),
    indexes: Type.Optional(addressMap({ description: 'Claim name → its address' })),
  },
  { additionalProperties: false, description: 'IPPoolStatus; written by metalflow' },
);
export type IPPoolStatus = Static<typeof IPPoolStatusSchema>;

export const IPClaimSpecSchema = Type.Object(
  { pool: { ...ObjectReferenceSchema, description: 'The IPPool to claim from (its namespace: the claim\'s)' } },
  { additionalProperties: false, description: 'IPClaimSpec (Metal3 field-compatible)' },
);
export type IPClaimSpec = Static<typeof IPClaimSpecSchema>;

export const IPClaimStatusSchema = Type.Object(
  {
    address: Type.Optional({ ...ObjectReferenceSchema, description: 'The IPAddress allocated for this claim' }),
    errorMessage: Type.Optional(Type.String({ maxLength: 4096, description: 'Why no address was allocated (a full pool, an unknown pool, …)' })),
  },
  { additionalProperties: false, description: 'IPClaimStatus; written by metalflow' },
);
export type IPClaimStatus = Static<typeof IPClaimStatusSchema>;

export const IPAddressSpecSchema = Type.Object(
  {
    claim: { ...ObjectReferenceSchema, description: 'The IPClaim this address was allocated for' },
    pool: { ...ObjectReferenceSchema, description: 'The IPPool it came from' },
    prefix: Type.Optional(PrefixSchema),
    gateway: Type.Optional(IpAddressStringSchema),
    address: IpAddressStringSchema,
    dnsServers: Type.Optional(DnsServersSchema),
  },
  { additionalProperties: false, description: 'IPAddressSpec (Metal3 field-compatible)' },
);
export type IPAddressSpec = Static<typeof IPAddressSpecSchema>;

/** A pool's identity: pools, claims and addresses live in one namespace, as in Metal3. */
export interface PoolRef {
  namespace: string;
  name: string;
}

/** What the pool records for each claim that holds an address. */
export interface Allocation {
  address: string;
  prefix?: number;
  gateway?: string;
  dnsServers?: string[];
  /** When it was allocated (workflow time). */
  at: string;
}

/** Metal3's IPAddress object name: `<namePrefix>-<address>`, dots and colons as dashes, no trailing dash. */
export function ipAddressName(namePrefix: string, address: string): string {
  return `${namePrefix}-${address.replace(/[.:]/g, '-')}`.replace(/-+$/, '');
}

/** The IPAddress object of an allocation, as Metal3 writes its spec. */
export function ipAddressSpec(pool: PoolRef, claim: string, a: Allocation): IPAddressSpec {
  return {
    claim: { name: claim, namespace: pool.namespace },
    pool: { name: pool.name, namespace: pool.namespace },
    address: a.address,
    ...(a.prefix !== undefined ? { prefix: a.prefix } : {}),
    ...(a.gateway !== undefined ? { gateway: a.gateway } : {}),
    ...(a.dnsServers !== undefined ? { dnsServers: a.dnsServers } : {}),
  };
}
