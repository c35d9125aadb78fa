/**
 * IPv4 and IPv6 addresses as numbers (bigint), for the IP pools: parse,
 * render in canonical form (IPv6 as RFC 5952, as Go's net.IP prints it, so
 * an address reads the same here as in Metal3's objects), add offsets and
 * test subnet membership. Pure; used by the validator, the allocator and the
 * pool workflow alike.
 */

export type IpFamily = 4 | 6;

export interface Ip {
  family: IpFamily;
  value: bigint;
}

export interface Cidr {
  /** The network address (host bits cleared). */
  network: Ip;
  prefix: number;
}

export const FAMILY_BITS: Record<IpFamily, number> = { 4: 32, 6: 128 };

const V4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const HEXTET = /^[0-9a-fA-F]{1,4}$/;

function parseV4(text: string): bigint | undefined {
  if (!V4.test(text)) return undefined;
  return text.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function parseV6(text: string): bigint | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (s: string): string[] | undefined => {
    if (s === '') return [];
    const parts = s.split(':');
    return parts.every((p) => HEXTET.test(p)) ? parts : undefined;
  };
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const all = [...head, ...Array<string>(missing).fill('0'), ...tail];
  return all.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
}

/** An IPv4 dotted quad or an IPv6 address (no zone, no embedded IPv4); undefined when neither. */
export function parseIp(text: string): Ip | undefined {
  if (text.includes(':')) {
    const value = parseV6(text);
    return value === undefined ? undefined : { family: 6, value };
  }
  const value = parseV4(text);
  return value === undefined ? undefined : { family: 4, value };
}

/** `10.0.0.0/24` or `fd00::/64`; the address part may have host bits set (Go's ParseCIDR accepts it too). */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  if (slash < 0 || !/^\d{1,3}$/.test(text.slice(slash + 1))) return undefined;
  const ip = parseIp(text.slice(0, slash));
  const prefix = Number(text.slice(slash + 1));
  if (!ip || prefix > FAMILY_BITS[ip.family]) return undefined;
  return { network: { family: ip.family, value: ip.value & ~hostMask(ip.family, prefix) & maxValue(ip.family) }, prefix };
}

export const maxValue = (family: IpFamily): bigint => (1n << BigInt(FAMILY_BITS[family])) - 1n;
const hostMask = (family: IpFamily, prefix: number): bigint => (1n << BigInt(FAMILY_BITS[family] - prefix)) - 1n;

/** The last address of a subnet. */
export const lastOf = (c: Cidr): Ip => ({ family: c.network.family, value: c.network.value | hostMask(c.network.family, c.prefix) });

export function contains(c: Cidr, ip: Ip): boolean {
  return ip.family === c.network.family && ip.value >= c.network.value && ip.value <= lastOf(c).value;
}

export function formatIp(ip: Ip): string {
  if (ip.family === 4) return [24n, 16n, 8n, 0n].map((s) => String((ip.value >> s) & 255n)).join('.');
  const groups = Array.from({ length: 8 }, (_, i) => Number((ip.value >> BigInt(112 - 16 * i)) & 0xffffn));
  // RFC 5952: the longest run of two or more zero groups becomes '::' (the first such run on a tie).
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/** The canonical text of an address given as text (the key under which pools record it); the input when it does not parse. */
export function canonicalIp(text: string): string {
  const ip = parseIp(text);
  return ip ? formatIp(ip) : text;
}
