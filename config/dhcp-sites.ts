/**
 * METALFLOW_DHCP_SITES: each site's dnsmasq, as scripts/dnsmasq.sh lays it
 * out: `site=<dir>` pairs, comma-separated, where <dir> holds `hosts.d/` and
 * `dnsmasq.leases` (the script's `<state>/dnsmasq/<site>`). Paths with ',' or
 * '=' are not accepted. METALFLOW_DHCP_LEASE_SECONDS is the lease time the
 * dnsmasqs give (scripts/dnsmasq.sh's DHCP_LEASE_TIME; default 3600).
 */
import { isAbsolute, join } from 'node:path';

/** One site's dnsmasq, as scripts/dnsmasq.sh lays it out (`<state>/dnsmasq/<site>/{hosts.d,dnsmasq.leases}`). */
export interface DhcpSite {
  hostsDir: string;
  leasesFile: string;
  /** dnsmasq's lease time in seconds, to tell when a lease was last taken or renewed; omitted → lastSeen null. */
  leaseTimeSeconds?: number;
}

export function loadDhcpSites(env: NodeJS.ProcessEnv): Record<string, DhcpSite> {
  const raw = env.METALFLOW_DHCP_SITES?.trim();
  if (!raw) return {};
  const leaseRaw = env.METALFLOW_DHCP_LEASE_SECONDS ?? '3600';
  if (!/^\d{1,7}$/.test(leaseRaw) || Number(leaseRaw) < 120) {
    throw new Error(`METALFLOW_DHCP_LEASE_SECONDS must be whole seconds from 120 (dnsmasq's minimum) to 9999999, got "${leaseRaw}"`);
  }
  const sites: Record<string, DhcpSite> = {};
  for (const entry of raw.split(',')) {
    const [site, dir, ...rest] = entry.split('=').map((s) => s.trim());
    if (!site || !/^[a-z0-9-]{1,32}$/.test(site) || !dir || !isAbsolute(dir) || rest.length > 0) {
      throw new Error(`METALFLOW_DHCP_SITES: "${entry}" is not <site>=<absolute dir> (site: 1 to 32 of a-z, 0-9, '-')`);
    }
    if (Object.hasOwn(sites, site)) throw new Error(`METALFLOW_DHCP_SITES: site "${site}" is given twice`);
    sites[site] = { hostsDir: join(dir, 'hosts.d'), leasesFile: join(dir, 'dnsmasq.leases'), leaseTimeSeconds: Number(leaseRaw) };
  }
  return sites;
}
