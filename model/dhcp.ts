/**
 * A host's DHCP reservation (boot MAC → IPv4 address, hostname, tags) as
 * dnsmasq's dhcp-hostsdir takes it, and what the host's status records of its
 * lease. Validation lives here so the API, the workflow and the activity agree.
 */
import { ok, type FieldError, type Result } from './field-error';
import { normalizeMac } from './mac';
import { isIPv4 } from './uri-syntax';

export interface DhcpReservation {
  /** The host's key, `<namespace>/<name>`: names the reservation file. */
  host: string;
  /** Boot NIC MAC address (any accepted form; stored lower-case colon form). */
  mac: string;
  /** The IPv4 address the MAC gets. Required unless `ignore`. */
  ip?: string;
  /** Hostname dnsmasq hands out with the lease. */
  hostname?: string;
  /** dnsmasq tags set for this MAC (`set:<tag>`), e.g. the site or `provisioning`. */
  tags?: string[];
  /** The host must not PXE: dnsmasq ignores its DHCP requests altogether. */
  ignore?: boolean;
}

/** `status.dhcp`: the host's lease as its site's dnsmasq recorded it. */
export interface DhcpStatus {
  /** The leased address. */
  address: string;
  /** When the lease ends (ISO 8601); null for an infinite lease. */
  leaseExpiry: string | null;
  /** When the host last took or renewed the lease (expiry minus the lease time; ISO 8601), when the lease time is known. */
  lastSeen: string | null;
}

const HOST_KEY = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\/[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/;
/** RFC 1123 hostname labels: dnsmasq refuses others. */
const HOSTNAME = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
/** A dnsmasq tag: no commas (the field separator), no `!` (negation), no spaces. */
const TAG = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

/** Validates a reservation; returns it with the MAC normalized. `field` prefixes the error paths. */
export function validateReservation(r: DhcpReservation, field = 'dhcp'): Result<DhcpReservation> {
  const errors: FieldError[] = [];
  if (typeof r.host !== 'string' || !HOST_KEY.test(r.host)) {
    errors.push({ field: `${field}.host`, reason: `"${String(r.host)}" is not a host key: expected <namespace>/<name> in lower-case letters, digits, '-' and '.'` });
  }
  const mac = normalizeMac(r.mac, `${field}.mac`);
  if (!mac.ok) errors.push(...mac.errors);
  if (r.ip !== undefined && (typeof r.ip !== 'string' || !isIPv4(r.ip))) {
    errors.push({ field: `${field}.ip`, reason: `"${String(r.ip)}" is not an IPv4 address (dotted quad, e.g. 10.251.0.10)` });
  }
  if (r.ip === undefined && !r.ignore) {
    errors.push({ field: `${field}.ip`, reason: 'an address is required unless the reservation is `ignore` (the host must not PXE)' });
  }
  if (r.hostname !== undefined && (typeof r.hostname !== 'string' || r.hostname.length > 253 || !HOSTNAME.test(r.hostname))) {
    errors.push({ field: `${field}.hostname`, reason: `"${String(r.hostname)}" is not a hostname: letters, digits and '-' in dot-separated labels of at most 63 characters` });
  }
  for (const [i, tag] of (r.tags ?? []).entries()) {
    if (typeof tag !== 'string' || !TAG.test(tag)) {
      errors.push({ field: `${field}.tags[${i}]`, reason: `"${String(tag)}" is not a dnsmasq tag: 1 to 63 letters, digits, '_', '.', '-', starting with a letter or digit` });
    }
  }
  if ((r.tags?.length ?? 0) > 16) errors.push({ field: `${field}.tags`, reason: `${r.tags?.length} tags; at most 16` });
  if (errors.length > 0 || !mac.ok) return { ok: false, errors };
  return ok({ ...r, mac: mac.value, tags: r.tags ? [...new Set(r.tags)] : undefined });
}
