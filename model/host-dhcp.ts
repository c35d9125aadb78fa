/**
 * `spec.dhcp` (a metalflow extension, as `provisioner` is) and `status.dhcp`:
 * the host's DHCP reservation in its site's dnsmasq, with a fixed address or
 * one claimed from an IPPool, and its lease as read back. Metal3 has no such
 * field: its hosts get addresses from Ironic's dnsmasq pool or from
 * CAPM3's Metal3Data, neither of which reserves a MAC → address pair.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { FieldError } from './field-error';
import { validateReservation } from './dhcp';

const open = { additionalProperties: false } as const;
/** A site name: what METALFLOW_DHCP_SITES names (a DNS label). */
export const SITE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const OBJECT_NAME = /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/;
export const DEFAULT_DHCP_SITE = 'default';

export const HostDhcpSchema = Type.Object(
  {
    site: Type.Optional(
      Type.String({ maxLength: 63, description: 'Which site\'s dnsmasq holds the reservation (METALFLOW_DHCP_SITES); "default" when unset' }),
    ),
    address: Type.Optional(Type.String({ maxLength: 64, description: 'The IPv4 address the boot MAC gets; or give ipPool' })),
    ipPool: Type.Optional(
      Type.Object(
        { name: Type.String({ minLength: 1, maxLength: 253, description: "IPPool in the host's namespace; the host claims an address from it, the claim named after the host" }) },
        open,
      ),
    ),
    hostname: Type.Optional(Type.String({ maxLength: 253, description: "Hostname dnsmasq hands out; the host's name when unset" })),
    tags: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 16, description: 'dnsmasq tags set for the MAC (set:<tag>)' })),
    ignore: Type.Optional(Type.Boolean({ description: 'The host must not PXE: its site\'s dnsmasq ignores its boot MAC' })),
  },
  { ...open, description: 'metalflow extension: a DHCP reservation for the boot MAC in the site\'s dnsmasq (docs/dhcp-and-ipam.md)' },
);

export const HostDhcpStatusSchema = Type.Object(
  {
    site: Type.String({ maxLength: 63 }),
    /** The address reserved for the boot MAC (absent for an `ignore` reservation). */
    reservedAddress: Type.Optional(Type.String({ maxLength: 64 })),
    /** The IPPool claim the address came from. */
    ipPool: Type.Optional(Type.Object({ name: Type.String({ maxLength: 253 }), claim: Type.String({ maxLength: 253 }) }, open)),
    /** The leased address, when the boot MAC holds a lease. */
    address: Type.Optional(Type.String({ maxLength: 64 })),
    leaseExpiry: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
    lastSeen: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
  },
  { ...open, description: 'The DHCP reservation written for the host and its lease as the site\'s dnsmasq records it' },
);

export type HostDhcp = Static<typeof HostDhcpSchema>;
export type HostDhcpStatus = Static<typeof HostDhcpStatusSchema>;

/** Field errors of `spec.dhcp`; `mac` is spec.bootMACAddress (checked elsewhere). */
export function hostDhcpErrors(d: HostDhcp, host: { namespace: string; name: string }, mac: string | undefined): FieldError[] {
  const errors: FieldError[] = [];
  if (d.site !== undefined && !SITE.test(d.site)) {
    errors.push({ field: 'spec.dhcp.site', reason: `"${d.site}" is not a site name: lower-case letters, digits and '-', at most 63 (a name METALFLOW_DHCP_SITES gives)` });
  }
  if (!mac) errors.push({ field: 'spec.bootMACAddress', reason: 'is required with spec.dhcp: the reservation is for the boot MAC' });
  if (d.ignore && (d.address !== undefined || d.ipPool !== undefined)) {
    errors.push({ field: 'spec.dhcp.ignore', reason: 'an ignored MAC gets no address: remove address and ipPool, or ignore' });
  } else if (!d.ignore && (d.address === undefined) === (d.ipPool === undefined)) {
    errors.push({ field: 'spec.dhcp', reason: 'give exactly one of address (a fixed IPv4 address) and ipPool (claim one from an IPPool), or ignore: true' });
  }
  if (d.ipPool && !OBJECT_NAME.test(d.ipPool.name)) {
    errors.push({ field: 'spec.dhcp.ipPool.name', reason: `"${d.ipPool.name}" is not an IPPool name (lower-case DNS subdomain)` });
  }
  // The reservation's own rules (address, hostname, tags), reported under spec.dhcp's names.
  const probe = validateReservation(
    {
      host: `${host.namespace}/${host.name}`,
      mac: '02:00:00:00:00:00',
      ...(d.address !== undefined ? { ip: d.address } : {}),
      ...(d.hostname !== undefined ? { hostname: d.hostname } : {}),
      ...(d.tags ? { tags: d.tags } : {}),
      ignore: true,
    },
    'spec.dhcp',
  );
  if (!probe.ok) {
    errors.push(...probe.errors.filter((e) => e.field !== 'spec.dhcp.host').map((e) => (e.field === 'spec.dhcp.ip' ? { ...e, field: 'spec.dhcp.address' } : e)));
  }
  return errors;
}
