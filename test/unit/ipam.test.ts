/**
 * The IP pool model alone: address math, validation field by field, and the
 * allocator's choices (Metal3's order, pre-allocations, requested addresses,
 * a full pool). The concurrency and crash behaviour is the pool workflow's
 * (test/integration/ipam.test.ts, test/e2e/ipam-worker-crash.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { canonicalIp, formatIp, parseCidr, parseIp } from '../../model/ipam-address';
import { allocateAddress } from '../../model/ipam-allocate';
import { validateClaimSpec, validatePoolSpec, poolChangeErrors } from '../../model/ipam-validate';
import { ipAddressName, type Allocation, type IPPoolSpec } from '../../model/ipam';

const ref = { namespace: 'ns', name: 'pool1' };
const at = '2026-01-01T00:00:00Z';
const fields = (body: unknown): string[] => {
  const r = validatePoolSpec(body);
  return r.ok ? [] : r.errors.map((e) => `${e.field}: ${e.reason}`);
};

function fill(spec: IPPoolSpec, claims: string[], allocations: Record<string, Allocation> = {}): Record<string, Allocation> {
  for (const claim of claims) {
    const r = allocateAddress(ref, spec, allocations, { claim, at, random: Math.random });
    if (!r.ok) throw new Error(r.message);
    allocations[claim] = r.allocation;
  }
  return allocations;
}

describe('addresses', () => {
  it('parses and prints IPv4 and IPv6 in canonical form (RFC 5952, as Go prints them)', () => {
    expect(formatIp(parseIp('192.168.0.10')!)).toBe('192.168.0.10');
    expect(canonicalIp('2001:DB8:0:0:0:0:0:1')).toBe('2001:db8::1');
    expect(canonicalIp('2001:db8:0:0:1:0:0:1')).toBe('2001:db8::1:0:0:1');
    expect(canonicalIp('::')).toBe('::');
    for (const bad of ['192.168.0.256', '01.2.3.4', '1.2.3', '1::2::3', 'fe80::1%eth0', '']) expect(parseIp(bad)).toBeUndefined();
    expect(formatIp(parseCidr('10.1.2.3/8')!.network)).toBe('10.0.0.0');
    expect(parseCidr('10.0.0.0/33')).toBeUndefined();
  });

  it("names IPAddress objects as Metal3 does: <namePrefix>-<address with dashes>", () => {
    expect(ipAddressName('pool1-prov', '192.168.0.10')).toBe('pool1-prov-192-168-0-10');
    expect(ipAddressName('p', 'fd00::')).toBe('p-fd00');
  });
});

describe('IPPool validation', () => {
  it('accepts Metal3\'s example pool', () => {
    expect(fields({ namePrefix: 'pool1-prov', pools: [{ start: '192.168.0.10', end: '192.168.0.50', prefix: 24, gateway: '192.168.0.1' }] })).toEqual([]);
  });

  it('names each bad field and says what is accepted', () => {
    expect(fields({ pools: [] })).toEqual(['spec.namePrefix: is required']);
    expect(fields({ namePrefix: 'p', pools: [{ start: '10.0.0.20', end: '10.0.0.10' }] })).toEqual([
      'spec.pools[0].end: 10.0.0.10 is before the range\'s first address 10.0.0.20: start must be ≤ end',
    ]);
    expect(fields({ namePrefix: 'p', pools: [{ start: '10.0.1.5', subnet: '10.0.0.0/24' }] })).toEqual(['spec.pools[0].start: 10.0.1.5 is not inside subnet 10.0.0.0/24']);
    expect(fields({ namePrefix: 'p', pools: [{ start: '10.0.0.5', end: 'fd00::1' }] })).toEqual(['spec.pools[0].end: is IPv6 but the range is IPv4']);
    expect(fields({ namePrefix: 'p', pools: [{ end: '10.0.0.5' }] })).toEqual(['spec.pools[0]: needs start or subnet (Metal3: either Start or Subnet is required)']);
    expect(fields({ namePrefix: 'p', pools: [{ subnet: '10.0.0.0/24', prefix: 33 }] })).toEqual(['spec.pools[0].prefix: 33 is not an IPv4 prefix (0-32)']);
    expect(fields({ namePrefix: 'p', prefix: 129 })[0]).toMatch(/^spec\.prefix: /);
    expect(fields({ namePrefix: 'p', pools: [{ subnet: '10.0.0.0/24' }], prefix: 40 })).toEqual(['spec.prefix: 40 is not an IPv4 prefix (0-32); the pool\'s ranges are IPv4']);
    expect(fields({ namePrefix: 'p', gateway: 'gw', dnsServers: ['8.8.8.8', 'x'] })).toEqual([
      'spec.gateway: "gw" is not an IPv4 or IPv6 address',
      'spec.dnsServers[1]: "x" is not an IPv4 or IPv6 address',
    ]);
    expect(fields({ namePrefix: 'p', pools: [{ subnet: 'fd00::/64', prefix: 64 }] })).toEqual([]);
  });

  it('keeps preAllocations inside the pools and unshared', () => {
    expect(fields({ namePrefix: 'p', pools: [{ start: '10.0.0.10', end: '10.0.0.20' }], preAllocations: { a: '10.0.0.30', b: '10.0.0.11', c: '10.0.0.11' } })).toEqual([
      'spec.preAllocations.a: 10.0.0.30 is outside every range of spec.pools (Metal3: out of bonds of the pools given)',
      'spec.preAllocations.c: 10.0.0.11 is already pre-allocated to claim "b"',
    ]);
  });

  it('refuses a new spec that renames the addresses or strands an allocation', () => {
    const spec: IPPoolSpec = { namePrefix: 'p', pools: [{ start: '10.0.0.10', end: '10.0.0.20' }] };
    const allocations = fill(spec, ['a', 'b']);
    expect(poolChangeErrors(spec, { ...spec, namePrefix: 'q' }, allocations).map((e) => e.field)).toEqual(['spec.namePrefix']);
    expect(poolChangeErrors(spec, { ...spec, pools: [{ start: '10.0.0.11', end: '10.0.0.20' }] }, allocations)[0]!.reason).toMatch(/10\.0\.0\.10 \(claim a\)/);
    expect(poolChangeErrors(spec, { ...spec, pools: [{ start: '10.0.0.10', end: '10.0.0.30' }] }, allocations)).toEqual([]);
  });

  it('checks a claim names a pool of its own namespace', () => {
    expect(validateClaimSpec({ pool: { name: 'pool1', namespace: 'ns' } }, 'ns').ok).toBe(true);
    const r = validateClaimSpec({ pool: { name: 'pool1', namespace: 'other' } }, 'ns');
    expect(r.ok ? [] : r.errors.map((e) => e.field)).toEqual(['spec.pool.namespace']);
  });
});

describe('allocation', () => {
  it('hands out the first free address, range after range, with the range\'s or the pool\'s prefix, gateway and DNS', () => {
    const spec: IPPoolSpec = {
      namePrefix: 'p',
      prefix: 24,
      gateway: '10.0.0.1',
      dnsServers: ['10.0.0.2'],
      pools: [{ start: '10.0.0.10', end: '10.0.0.11' }, { subnet: '10.0.1.0/30', gateway: '10.0.1.254', prefix: 30 }],
    };
    const a = fill(spec, ['a', 'b', 'c']);
    expect(a.a).toMatchObject({ address: '10.0.0.10', prefix: 24, gateway: '10.0.0.1', dnsServers: ['10.0.0.2'] });
    expect(a.b!.address).toBe('10.0.0.11');
    // A subnet-only range starts at the subnet address + 1 (Metal3's GetIPAddress).
    expect(a.c).toMatchObject({ address: '10.0.1.1', prefix: 30, gateway: '10.0.1.254' });
  });

  it('reserves pre-allocated addresses for their claims and gives a requested one only if free', () => {
    const spec: IPPoolSpec = { namePrefix: 'p', pools: [{ start: '10.0.0.10', end: '10.0.0.13' }], preAllocations: { later: '10.0.0.10' } };
    const a = fill(spec, ['x', 'later']);
    expect(a.x!.address).toBe('10.0.0.11');
    expect(a.later!.address).toBe('10.0.0.10');
    const held = allocateAddress(ref, spec, a, { claim: 'y', requested: '10.0.0.11', at, random: Math.random });
    expect(held).toMatchObject({ ok: false, type: 'AddressUnavailable' });
    expect(allocateAddress(ref, spec, a, { claim: 'y', requested: '10.0.0.13', at, random: Math.random })).toMatchObject({ ok: true, allocation: { address: '10.0.0.13' } });
  });

  it('says which pool is full and how big it is', () => {
    const spec: IPPoolSpec = { namePrefix: 'p', pools: [{ start: '10.0.0.10', end: '10.0.0.12' }] };
    const a = fill(spec, ['a', 'b', 'c']);
    const r = allocateAddress(ref, spec, a, { claim: 'd', at, random: Math.random });
    expect(r).toMatchObject({ ok: false, type: 'PoolExhausted' });
    expect(!r.ok && r.message).toBe(
      'Exhausted IP Pools: pool ns/pool1 has 3 address(es) in 1 range(s), all allocated or pre-allocated (3 claim(s) hold one); release a claim or add a range',
    );
  });

  it('random strategy: distinct addresses inside the range; IPv6 works the same way', () => {
    const spec: IPPoolSpec = { namePrefix: 'p', allocationStrategy: 'random', pools: [{ subnet: 'fd00::/120' }] };
    const a = fill(spec, Array.from({ length: 100 }, (_, i) => `c${i}`));
    const addresses = Object.values(a).map((x) => x.address);
    expect(new Set(addresses).size).toBe(100);
    for (const x of addresses) expect(x).toMatch(/^fd00::[0-9a-f]{1,2}$/);
  });
});
