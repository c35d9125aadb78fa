/**
 * Choosing a claim's address from a pool, as Metal3's IPPoolManager does:
 * a pre-allocated claim gets its address; a claim asking for one (the
 * `ipAddress` annotation) gets that one if free; any other gets the first free
 * address of the first range that has one (sequential), or a random free one
 * of it (random). Pre-allocated addresses are reserved for their claims.
 * Pure and deterministic given `random`, so the pool workflow runs it.
 */
import { canonicalIp, formatIp, parseIp, type Ip } from './ipam-address';
import { compileRanges, poolSize, rangeOf, rangeSize, type Range } from './ipam-ranges';
import type { Allocation, IPPoolSpec, PoolRef } from './ipam';

export type AllocationFailureType = 'PoolExhausted' | 'PreAllocationOutOfBounds' | 'AddressUnavailable';

export type AllocationResult = { ok: true; allocation: Allocation } | { ok: false; type: AllocationFailureType; message: string };

export interface AllocationRequest {
  claim: string;
  /** Metal3's `ipAddress` annotation: this address or none. */
  requested?: string;
  at: string;
  /** [0, 1): the workflow's deterministic Math.random. */
  random: () => number;
}

/** Addresses nobody else may get: every allocation and every other claim's pre-allocation, by canonical text. */
function taken(spec: IPPoolSpec, allocations: Record<string, Allocation>, claim: string): Map<string, string> {
  const used = new Map<string, string>();
  for (const [c, address] of Object.entries(spec.preAllocations ?? {})) if (c !== claim) used.set(canonicalIp(address), c);
  // Allocations are recorded in canonical form already (formatIp).
  for (const [c, a] of Object.entries(allocations)) used.set(a.address, c);
  return used;
}

function allocation(spec: IPPoolSpec, range: Range, ip: Ip, at: string): Allocation {
  const prefix = range.prefix ?? spec.prefix;
  const gateway = range.gateway ?? spec.gateway;
  const dnsServers = range.dnsServers ?? (spec.dnsServers && spec.dnsServers.length > 0 ? spec.dnsServers : undefined);
  return {
    address: formatIp(ip),
    ...(prefix !== undefined ? { prefix } : {}),
    ...(gateway !== undefined ? { gateway } : {}),
    ...(dnsServers !== undefined ? { dnsServers } : {}),
    at,
  };
}

/** A uniform-enough bigint in [0, n) from [0, 1) draws, 48 bits at a time. */
function randomBelow(n: bigint, random: () => number): bigint {
  let v = 0n;
  for (let bits = 0n; 1n << bits < n; bits += 48n) v = (v << 48n) | BigInt(Math.floor(random() * 2 ** 48));
  return v % n;
}

function firstFree(range: Range, used: Map<string, string>, startOffset: bigint): Ip | undefined {
  const size = rangeSize(range);
  for (let i = 0n; i < size; i++) {
    const ip: Ip = { family: range.family, value: range.first + ((startOffset + i) % size) };
    if (!used.has(formatIp(ip))) return ip;
  }
  return undefined;
}

export function allocateAddress(pool: PoolRef, spec: IPPoolSpec, allocations: Record<string, Allocation>, req: AllocationRequest): AllocationResult {
  const ranges = compileRanges(spec);
  const used = taken(spec, allocations, req.claim);
  const pre = spec.preAllocations?.[req.claim];
  const requested = req.requested ?? pre;
  if (req.requested !== undefined && pre !== undefined && canonicalIp(req.requested) !== canonicalIp(pre)) {
    return { ok: false, type: 'AddressUnavailable', message: `claim ${req.claim} asks for ${req.requested} but is pre-allocated ${pre} in pool ${pool.namespace}/${pool.name} (Metal3: PreAllocation and requested ip address are conflicting)` };
  }
  if (requested !== undefined) {
    const ip = parseIp(requested);
    const range = ip && rangeOf(ranges, ip);
    if (!ip || !range) {
      return pre !== undefined
        ? { ok: false, type: 'PreAllocationOutOfBounds', message: `the pre-allocated address ${pre} of claim ${req.claim} is outside every range of pool ${pool.namespace}/${pool.name}` }
        : { ok: false, type: 'AddressUnavailable', message: `requested address ${requested} is not in any range of pool ${pool.namespace}/${pool.name}` };
    }
    const holder = used.get(formatIp(ip));
    if (holder !== undefined) {
      return { ok: false, type: 'AddressUnavailable', message: `address ${requested} of pool ${pool.namespace}/${pool.name} is held by claim ${holder}` };
    }
    return { ok: true, allocation: allocation(spec, range, ip, req.at) };
  }
  // Ranges in declaration order: one is exhausted before the next is used (Metal3's rule for both strategies).
  for (const range of ranges) {
    const offset = spec.allocationStrategy === 'random' ? randomBelow(rangeSize(range), req.random) : 0n;
    const ip = firstFree(range, used, offset);
    if (ip) return { ok: true, allocation: allocation(spec, range, ip, req.at) };
  }
  const size = poolSize(ranges);
  return {
    ok: false,
    type: 'PoolExhausted',
    message: `Exhausted IP Pools: pool ${pool.namespace}/${pool.name} has ${size} address(es) in ${ranges.length} range(s), all allocated or pre-allocated (${Object.keys(allocations).length} claim(s) hold one); release a claim or add a range`,
  };
}
