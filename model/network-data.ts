/**
 * The config drive's `network_data.json` for a host whose address comes from
 * an IPPool (spec.dhcp.ipPool) and that names no networkData of its own: the
 * OpenStack network_data format with the field names CAPM3's
 * Metal3DataTemplate renders (`links[].ethernet_mac_address`,
 * `networks[].ip_address`/`netmask`/`routes`, `services[]` of type `dns`),
 * so cloud-init configures the boot NIC, found by its MAC, with the address
 * the host's DHCP reservation gives it.
 */
import { FAMILY_BITS, parseIp } from './ipam-address';

export interface AddressNetworkData {
  /** The boot NIC's MAC. */
  mac: string;
  address: string;
  prefix?: number;
  gateway?: string;
  dnsServers?: string[];
  /** The IPPool's name: the network's id. */
  pool: string;
}

/** The prefix's netmask in the address's family (`255.255.255.0`, `ffff:ffff:ffff:ffff::`). */
export function netmaskOf(address: string, prefix: number): string {
  const ip = parseIp(address);
  if (!ip) throw new Error(`${address} is not an IP address`);
  const bits = FAMILY_BITS[ip.family];
  const mask = ((1n << BigInt(prefix)) - 1n) << BigInt(bits - prefix);
  if (ip.family === 4) return [24, 16, 8, 0].map((s) => String(Number((mask >> BigInt(s)) & 255n))).join('.');
  const groups = Array.from({ length: 8 }, (_, i) => Number((mask >> BigInt(112 - 16 * i)) & 0xffffn).toString(16));
  // Trailing zero groups as '::' (a mask's zeros are all at the end).
  const kept = groups.join(':').replace(/(:0)+$/, '');
  return kept === groups.join(':') ? kept : kept === '0' ? '::' : `${kept}::`;
}

export function renderNetworkData(a: AddressNetworkData): Record<string, unknown> {
  const ip = parseIp(a.address);
  const v6 = ip?.family === 6;
  const link = 'boot';
  const dns = (a.dnsServers ?? []).map((address) => ({ type: 'dns', address }));
  const routes = a.gateway
    ? [{ network: v6 ? '::' : '0.0.0.0', netmask: v6 ? '::' : '0.0.0.0', gateway: a.gateway, ...(dns.length ? { services: dns } : {}) }]
    : [];
  return {
    links: [{ id: link, type: 'phy', ethernet_mac_address: a.mac }],
    networks: [
      {
        id: a.pool,
        type: v6 ? 'ipv6' : 'ipv4',
        link,
        ip_address: a.address,
        ...(a.prefix !== undefined ? { netmask: netmaskOf(a.address, a.prefix) } : {}),
        routes,
        ...(dns.length ? { services: dns } : {}),
      },
    ],
    services: dns,
  };
}
