/**
 * Which addresses the worker's own image fetches (probe, checksum file, the
 * cache's and the direct provisioner's downloads) may connect to. An image URL
 * comes from anyone with `operate` on one namespace; without a policy it could
 * make the worker read its cloud's metadata service, its own listeners, or
 * anything on loopback, and report the answer's status back in the host's
 * error. Checked on the address a connection is about to use, after DNS (a
 * name that resolves to 169.254.169.254 is refused like the literal) and on
 * every redirect hop.
 */
import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { networkInterfaces } from 'node:os';

export interface AddressPolicy {
  /** Refused unless `allow` covers the address. */
  deny: BlockList;
  /** Let through despite `deny` (e.g. loopback for a demo or the tests' image servers). */
  allow: BlockList;
  /** Ports of the worker's own listeners: refused on its own addresses even when `allow` covers them. */
  ownPorts: ReadonlySet<number>;
  /** Where the allowance is configured, for messages. */
  allowSetting: string;
  /** Why each default range is refused, for messages. */
  reasons: Array<{ list: BlockList; why: string }>;
}

const DEFAULT_DENY: Array<{ why: string; cidrs: string[] }> = [
  { why: 'loopback', cidrs: ['127.0.0.0/8', '::1/128'] },
  { why: 'link-local (cloud metadata services live here)', cidrs: ['169.254.0.0/16', 'fe80::/10', 'fd00:ec2::254/128'] },
  { why: 'unspecified or "this host"', cidrs: ['0.0.0.0/8', '::/128'] },
];
/** Opt-in: `private` in the deny setting. Images are often served on a private provisioning network, so not by default. */
export const PRIVATE_RANGES = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', 'fc00::/7'];

export class AddressRefusedError extends Error {
  override readonly name = 'AddressRefusedError';
  readonly code = 'EADDRREFUSED_POLICY';
  constructor(
    readonly address: string,
    readonly port: number | undefined,
    why: string,
    allowSetting: string,
  ) {
    super(`the worker does not connect to ${address}${port ? ` port ${port}` : ''}: ${why}; ${allowSetting} lists the ranges let through`);
  }
}

/** `::ffff:10.0.0.1` → `10.0.0.1`: an IPv4-mapped address is checked as the IPv4 address it reaches. */
function normalize(address: string): { address: string; family: 'ipv4' | 'ipv6' } {
  const bare = address.replace(/^\[|\]$/g, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  if (mapped) return { address: mapped[1]!, family: 'ipv4' };
  return { address: bare, family: isIP(bare) === 6 ? 'ipv6' : 'ipv4' };
}

function addCidr(list: BlockList, cidr: string, setting: string): void {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(cidr.trim());
  const family = m ? isIP(m[1]!) : 0;
  const prefix = m ? Number(m[2]) : -1;
  if (!m || family === 0 || prefix > (family === 4 ? 32 : 128)) throw new Error(`${setting}: "${cidr}" is not a CIDR (e.g. 127.0.0.0/8, ::1/128${setting.endsWith('DENY') ? ', or "private"' : ''})`);
  list.addSubnet(m[1]!, prefix, family === 4 ? 'ipv4' : 'ipv6');
}

const block = (cidrs: string[], setting: string): BlockList => {
  const list = new BlockList();
  for (const c of cidrs) addCidr(list, c, setting);
  return list;
};

export interface AddressPolicySettings {
  /** CIDRs let through despite the default deny-list (METALFLOW_IMAGE_FETCH_ALLOW). */
  allow?: string[];
  /** More CIDRs to refuse; `private` for the private ranges (METALFLOW_IMAGE_FETCH_DENY). */
  deny?: string[];
  /** The worker's own listening ports (image cache, metrics). */
  ownPorts?: number[];
}

export function addressPolicy(settings: AddressPolicySettings = {}): AddressPolicy {
  const reasons = DEFAULT_DENY.map((d) => ({ list: block(d.cidrs, 'default'), why: d.why }));
  const extra = (settings.deny ?? []).flatMap((c) => (c.trim() === 'private' ? PRIVATE_RANGES : [c]));
  if (extra.length > 0) reasons.push({ list: block(extra, 'METALFLOW_IMAGE_FETCH_DENY'), why: 'in METALFLOW_IMAGE_FETCH_DENY' });
  return {
    deny: block([...DEFAULT_DENY.flatMap((d) => d.cidrs), ...extra], 'METALFLOW_IMAGE_FETCH_DENY'),
    allow: block(settings.allow ?? [], 'METALFLOW_IMAGE_FETCH_ALLOW'),
    ownPorts: new Set(settings.ownPorts ?? []),
    allowSetting: 'METALFLOW_IMAGE_FETCH_ALLOW',
    reasons,
  };
}

/** The policy from METALFLOW_IMAGE_FETCH_ALLOW / _DENY (comma-separated CIDRs). */
export function addressPolicyFromEnv(env: NodeJS.ProcessEnv, ownPorts: number[] = []): AddressPolicy {
  const list = (v: string | undefined) => (v ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  return addressPolicy({ allow: list(env.METALFLOW_IMAGE_FETCH_ALLOW), deny: list(env.METALFLOW_IMAGE_FETCH_DENY), ownPorts });
}

function ownAddress(address: string, family: 'ipv4' | 'ipv6'): boolean {
  if (family === 'ipv4' ? address.startsWith('127.') || address === '0.0.0.0' : address === '::1' || address === '::') return true;
  return Object.values(networkInterfaces()).some((ifs) => (ifs ?? []).some((i) => normalize(i.address).address === address));
}

/** Why `address` (and `port`) is refused, or undefined when the policy lets it through. */
export function refusal(policy: AddressPolicy, rawAddress: string, port?: number): AddressRefusedError | undefined {
  const { address, family } = normalize(rawAddress);
  if (port !== undefined && policy.ownPorts.has(port) && ownAddress(address, family)) {
    return new AddressRefusedError(address, port, "it is one of the worker's own listeners", policy.allowSetting);
  }
  if (policy.allow.check(address, family)) return undefined;
  if (!policy.deny.check(address, family)) return undefined;
  const why = policy.reasons.find((r) => r.list.check(address, family))?.why ?? 'refused';
  return new AddressRefusedError(address, port, `${why} addresses are refused`, policy.allowSetting);
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net.connect / tls.connect that resolves as usual and then refuses any
 * address the policy refuses: the check is on what the socket will connect to.
 */
export function policyLookup(policy: AddressPolicy, port?: () => number | undefined) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const list = addresses as LookupAddress[];
      for (const a of list) {
        const refused = refusal(policy, a.address, port?.());
        if (refused) return callback(Object.assign(refused, { hostname }), []);
      }
      if (options.all) return callback(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

/** Whether `err` (or what it wraps) is the policy's refusal. */
export function addressRefused(err: unknown): AddressRefusedError | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof AddressRefusedError) return e;
  }
  return undefined;
}
