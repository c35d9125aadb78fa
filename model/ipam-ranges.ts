/**
 * An IPPool's ranges as numbers: where each range starts and ends, as
 * Metal3's GetIPAddress reads `start`, `end` and `subnet` (without `start`
 * a range begins at the subnet address + 1 and runs to the end of the
 * subnet; `end` bounds it further). Pure.
 */
import type { FieldError } from './field-error';
import { contains, FAMILY_BITS, lastOf, maxValue, parseCidr, parseIp, type Ip, type IpFamily } from './ipam-address';
import type { IpRange, IPPoolSpec } from './ipam';

export interface Range {
  family: IpFamily;
  first: bigint;
  last: bigint;
  prefix?: number;
  gateway?: string;
  dnsServers?: string[];
}

/** One range of a pool, or the field errors that keep it from being one (field paths under `path`). */
export function compileRange(r: IpRange, path: string): { range?: Range; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const start = r.start !== undefined ? parseIp(r.start) : undefined;
  const end = r.end !== undefined ? parseIp(r.end) : undefined;
  const subnet = r.subnet !== undefined ? parseCidr(r.subnet) : undefined;
  if (r.start !== undefined && !start) errors.push({ field: `${path}.start`, reason: `"${r.start}" is not an IPv4 or IPv6 address` });
  if (r.end !== undefined && !end) errors.push({ field: `${path}.end`, reason: `"${r.end}" is not an IPv4 or IPv6 address` });
  if (r.subnet !== undefined && !subnet) errors.push({ field: `${path}.subnet`, reason: `"${r.subnet}" is not a subnet in CIDR notation (e.g. 192.168.0.0/24, fd00::/64)` });
  if (r.start === undefined && r.subnet === undefined) errors.push({ field: path, reason: 'needs start or subnet (Metal3: either Start or Subnet is required)' });
  if (errors.length > 0) return { errors };
  const family = (start ?? subnet!.network).family;
  const same = (field: string, ip: Ip | undefined): void => {
    if (ip && ip.family !== family) errors.push({ field: `${path}.${field}`, reason: `is IPv${ip.family} but the range is IPv${family}` });
  };
  same('end', end);
  same('subnet', subnet?.network);
  if (errors.length > 0) return { errors };
  const first = start?.value ?? subnet!.network.value + 1n;
  let last = subnet ? lastOf(subnet).value : maxValue(family);
  if (subnet && start && !contains(subnet, start)) errors.push({ field: `${path}.start`, reason: `${r.start} is not inside subnet ${r.subnet}` });
  if (subnet && end && !contains(subnet, end)) errors.push({ field: `${path}.end`, reason: `${r.end} is not inside subnet ${r.subnet}` });
  if (end) {
    if (end.value < first) errors.push({ field: `${path}.end`, reason: `${r.end} is before the range's first address ${r.start ?? `(${r.subnet} + 1)`}: start must be ≤ end` });
    if (end.value < last) last = end.value;
  }
  if (errors.length === 0 && first > last) errors.push({ field: path, reason: `holds no address (subnet ${r.subnet} has none after its network address)` });
  if (r.prefix !== undefined && r.prefix > FAMILY_BITS[family]) errors.push({ field: `${path}.prefix`, reason: `${r.prefix} is not an IPv${family} prefix (0-${FAMILY_BITS[family]})` });
  errors.push(...addressErrors(`${path}.gateway`, r.gateway), ...(r.dnsServers ?? []).flatMap((d, i) => addressErrors(`${path}.dnsServers[${i}]`, d)));
  if (errors.length > 0) return { errors };
  return {
    range: {
      family,
      first,
      last,
      ...(r.prefix !== undefined && r.prefix !== 0 ? { prefix: r.prefix } : {}),
      ...(r.gateway !== undefined ? { gateway: r.gateway } : {}),
      ...(r.dnsServers !== undefined && r.dnsServers.length > 0 ? { dnsServers: r.dnsServers } : {}),
    },
    errors,
  };
}

export function addressErrors(field: string, text: string | undefined): FieldError[] {
  return text === undefined || parseIp(text) ? [] : [{ field, reason: `"${text}" is not an IPv4 or IPv6 address` }];
}

/** Every range of a valid spec (a range that does not compile is left out; the validator has refused such a spec). */
export function compileRanges(spec: IPPoolSpec): Range[] {
  return (spec.pools ?? []).flatMap((r, i) => compileRange(r, `spec.pools[${i}]`).range ?? []);
}

export const rangeSize = (r: Range): bigint => r.last - r.first + 1n;
export const poolSize = (ranges: Range[]): bigint => ranges.reduce((n, r) => n + rangeSize(r), 0n);

export function rangeOf(ranges: Range[], ip: Ip): Range | undefined {
  return ranges.find((r) => r.family === ip.family && ip.value >= r.first && ip.value <= r.last);
}
