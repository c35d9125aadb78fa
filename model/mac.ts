/** Boot NIC MAC addresses: syntax, normal form, and whether the BMC type needs one. */
import { fail, ok, type Result } from './field-error';
import type { BmcAccess } from './bmc-types';
import { isHexDigit } from './uri-syntax';

export const DEFAULT_MAC_FIELD = 'spec.bootMACAddress';

const MAC_FORM = "six two-digit hex octets separated consistently by ':' or '-', e.g. 52:54:00:12:34:56";

/**
 * Validates a boot NIC MAC address and returns it in lower-case colon form.
 * Accepts exactly 6 octets (aa:bb:cc:dd:ee:ff or AA-BB-CC-DD-EE-FF). Rejects
 * the all-zero address and multicast addresses (I/G bit set, which includes
 * broadcast): no NIC boots from those, so they are typos.
 */
export function normalizeMac(mac: string, field: string = DEFAULT_MAC_FIELD): Result<string> {
  if (typeof mac !== 'string' || mac.length === 0) {
    return fail(field, `MAC address is required: ${MAC_FORM}`);
  }
  if (mac.length !== 17) {
    return fail(field, `"${mac}" is not a 6-octet MAC address; expected ${MAC_FORM} (EUI-64 and 20-octet InfiniBand addresses are not accepted)`);
  }
  const sep = mac[2];
  if (sep !== ':' && sep !== '-') {
    return fail(field, `"${mac}" is not a MAC address; expected ${MAC_FORM}`);
  }
  const octets: number[] = [];
  for (let i = 0; i < 6; i++) {
    const a = mac.charCodeAt(i * 3);
    const b = mac.charCodeAt(i * 3 + 1);
    if (!isHexDigit(a) || !isHexDigit(b)) {
      return fail(field, `"${mac}" is not a MAC address; expected ${MAC_FORM}`);
    }
    if (i < 5 && mac[i * 3 + 2] !== sep) {
      return fail(field, `"${mac}" mixes or misplaces separators; expected ${MAC_FORM}`);
    }
    octets.push(parseInt(mac.slice(i * 3, i * 3 + 2), 16));
  }
  const normalized = octets.map((o) => o.toString(16).padStart(2, '0')).join(':');
  if (octets.every((o) => o === 0)) {
    return fail(field, `${normalized} is the all-zero MAC address, not a real NIC address`);
  }
  if (octets.every((o) => o === 0xff)) {
    return fail(field, `${normalized} is the broadcast address, not a NIC's address`);
  }
  if (((octets[0] ?? 0) & 1) === 1) {
    return fail(
      field,
      `${normalized} is a multicast address (lowest bit of the first octet is set); a boot NIC has a unicast address, check for a typo`,
    );
  }
  return ok(normalized);
}

/**
 * Checks `spec.bootMACAddress` against the BMC type: required when the type
 * needs a MAC (it cannot be discovered by inspection), otherwise optional;
 * when given it must be a valid unicast MAC and is returned normalized.
 */
export function validateBootMac(
  access: BmcAccess,
  mac: string | undefined,
  field: string = DEFAULT_MAC_FIELD,
): Result<string | undefined> {
  if (mac === undefined || mac === '') {
    if (access.capabilities.needsMAC) {
      return fail(
        field,
        `BMC type ${access.type} (driver ${access.driver}) requires a boot MAC address because it cannot be discovered by inspection; set ${field} to ${MAC_FORM}`,
      );
    }
    return ok(undefined);
  }
  return normalizeMac(mac, field);
}
