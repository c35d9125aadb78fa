/**
 * IPPool and IPClaim validation, field by field: the schema first, then what
 * Metal3's webhook checks (addresses that parse, start ≤ end, ranges inside
 * their subnet, preAllocations inside the pools and not shared, namePrefix
 * unchanged) and what the pool workflow needs (allocations kept inside the
 * ranges when a spec changes). Pure: the API, the controller and the pool
 * workflow's update validators run exactly this.
 */
import type { FieldError, Result } from './field-error';
import { schemaErrors } from './validate';
import { canonicalIp, FAMILY_BITS, parseIp } from './ipam-address';
import { addressErrors, compileRange, compileRanges, rangeOf, type Range } from './ipam-ranges';
import { IPClaimSpecSchema, IPPoolSpecSchema, type Allocation, type IPClaimSpec, type IPPoolSpec } from './ipam';

const DNS_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** A Kubernetes object name (DNS-1123 subdomain, ≤ 253); `what` names it in the reason. */
export function objectNameErrors(field: string, name: string, what: string): FieldError[] {
  return name.length <= 253 && DNS_NAME.test(name) ? [] : [{ field, reason: `"${name}" is not a valid ${what} name: lower-case letters, digits, '-' and '.', at most 253 characters, alphanumeric at both ends` }];
}

export function namespaceErrors(field: string, ns: string): FieldError[] {
  return ns.length <= 63 && DNS_LABEL.test(ns) ? [] : [{ field, reason: `"${ns}" is not a valid namespace (DNS-1123 label, at most 63 characters)` }];
}

export function validatePoolSpec(body: unknown): Result<IPPoolSpec> {
  const structural = schemaErrors(IPPoolSpecSchema, body, 'spec');
  if (structural.length > 0) return { ok: false, errors: structural };
  const spec = body as IPPoolSpec;
  const errors: FieldError[] = [
    ...addressErrors('spec.gateway', spec.gateway),
    ...(spec.dnsServers ?? []).flatMap((d, i) => addressErrors(`spec.dnsServers[${i}]`, d)),
  ];
  const ranges: Range[] = [];
  (spec.pools ?? []).forEach((r, i) => {
    const compiled = compileRange(r, `spec.pools[${i}]`);
    errors.push(...compiled.errors);
    if (compiled.range) ranges.push(compiled.range);
  });
  if (spec.prefix !== undefined && ranges.length > 0 && ranges.every((r) => r.family === 4) && spec.prefix > FAMILY_BITS[4]) {
    errors.push({ field: 'spec.prefix', reason: `${spec.prefix} is not an IPv4 prefix (0-32); the pool's ranges are IPv4` });
  }
  const holder = new Map<string, string>();
  for (const [claim, address] of Object.entries(spec.preAllocations ?? {})) {
    const field = `spec.preAllocations.${claim}`;
    const ip = parseIp(address);
    if (!ip) {
      errors.push({ field, reason: `"${address}" is not an IPv4 or IPv6 address` });
      continue;
    }
    if (errors.length === 0 && !rangeOf(ranges, ip)) errors.push({ field, reason: `${address} is outside every range of spec.pools (Metal3: out of bonds of the pools given)` });
    const key = canonicalIp(address);
    const other = holder.get(key);
    if (other !== undefined) errors.push({ field, reason: `${address} is already pre-allocated to claim "${other}"` });
    else holder.set(key, claim);
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: spec };
}

/**
 * A new spec for a pool that holds allocations: Metal3's webhook refuses a
 * changed namePrefix (IPAddress names derive from it) and ranges that would
 * leave an allocated address outside the pool.
 */
export function poolChangeErrors(old: IPPoolSpec, next: IPPoolSpec, allocations: Record<string, Allocation>): FieldError[] {
  const errors: FieldError[] = [];
  if (old.namePrefix !== next.namePrefix) errors.push({ field: 'spec.namePrefix', reason: `cannot change ("${old.namePrefix}"): the pool's IPAddress objects are named after it` });
  const ranges = compileRanges(next);
  const outside = Object.entries(allocations).filter(([, a]) => !rangeOf(ranges, parseIp(a.address)!));
  if (outside.length > 0) {
    const list = outside.slice(0, 5).map(([c, a]) => `${a.address} (claim ${c})`).join(', ');
    errors.push({ field: 'spec.pools', reason: `would leave ${outside.length} allocated address(es) outside the pool: ${list}${outside.length > 5 ? ', …' : ''}; release them first` });
  }
  return errors;
}

/** An IPClaim's spec: the pool it names (in the claim's namespace, as Metal3 looks pools up). */
export function validateClaimSpec(body: unknown, claimNamespace: string): Result<IPClaimSpec> {
  const structural = schemaErrors(IPClaimSpecSchema, body, 'spec');
  if (structural.length > 0) return { ok: false, errors: structural };
  const spec = body as IPClaimSpec;
  const errors: FieldError[] = [];
  if (!spec.pool.name) errors.push({ field: 'spec.pool.name', reason: 'is required: the IPPool to claim from' });
  else errors.push(...objectNameErrors('spec.pool.name', spec.pool.name, 'IPPool'));
  if (spec.pool.namespace && spec.pool.namespace !== claimNamespace) {
    errors.push({ field: 'spec.pool.namespace', reason: `must be the claim's namespace "${claimNamespace}" (Metal3 allocates from pools of the claim's namespace only)` });
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: spec };
}
