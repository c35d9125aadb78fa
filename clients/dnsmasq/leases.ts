/**
 * dnsmasq's leases file, read back. One line per lease:
 * `<expiry epoch seconds, 0 = infinite> <MAC> <IP> <hostname or *> <client-id or *>`
 * (IPv6 lines and the `duid` line are skipped). dnsmasq rewrites the file
 * whole, so a read sees one version of it.
 */
import { readFile } from 'node:fs/promises';
import { DhcpError } from './errors';

export interface Lease {
  /** null for an infinite lease. */
  expiry: Date | null;
  mac: string;
  ip: string;
  hostname: string | null;
  clientId: string | null;
}

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;
const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;

export function parseLeases(text: string): Lease[] {
  const leases: Lease[] = [];
  for (const line of text.split('\n')) {
    const [expiry, mac, ip, hostname, clientId] = line.trim().split(/\s+/);
    if (!expiry || !/^\d+$/.test(expiry) || !mac || !MAC.test(mac.toLowerCase()) || !ip || !IPV4.test(ip)) continue;
    const seconds = Number(expiry);
    leases.push({
      expiry: seconds === 0 ? null : new Date(seconds * 1000),
      mac: mac.toLowerCase(),
      ip,
      hostname: hostname && hostname !== '*' ? hostname : null,
      clientId: clientId && clientId !== '*' ? clientId : null,
    });
  }
  return leases;
}

/** The leases in the file; none when dnsmasq has not written it yet. */
export async function readLeases(path: string): Promise<Lease[]> {
  try {
    return parseLeases(await readFile(path, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return [];
    throw new DhcpError('io', `cannot read ${path}: ${code ?? 'error'}`);
  }
}
