/**
 * BMC address parsing and the per-BMC-type capability table.
 *
 * Modelled on Metal3 Bare Metal Operator's `pkg/hardwareutils/bmc` package
 * (AccessDetails per scheme: driver, interfaces, NeedsMAC, SupportsSecureBoot,
 * SupportsISOPreprovisioningImage, RequiresProvisioningNetwork, DriverInfo),
 * re-implemented here as a pure, deterministic module: no Node APIs, no I/O,
 * no third-party imports and no `URL` global, so it can be bundled into
 * Temporal workflows.
 *
 * Deliberate differences from BMO (stricter, so mistakes surface at admission):
 * - Redfish-family addresses must name the system (`/redfish/v1/Systems/<id>`);
 *   BMO today also accepts an empty path or bare `/redfish/v1` and lets Ironic
 *   pick the only system.
 * - Query strings are rejected (BMO reads `?privilegelevel=` for IPMI; here the
 *   privilege level is always ADMINISTRATOR) and so is the opaque
 *   `ipmi:host` form (write `ipmi://host`).
 * - `libvirt://` is not supported; `fake://<name>` is a metalflow extension.
 * - Boot MAC addresses must be 6-octet unicast addresses.
 */
import { fail, ok, type Result } from './field-error';

export type BmcType =
  | 'ipmi'
  | 'redfish'
  | 'redfish-virtualmedia'
  | 'redfish-uefihttp'
  | 'idrac-redfish'
  | 'idrac-virtualmedia'
  | 'ilo5-redfish'
  | 'ilo5-virtualmedia'
  | 'fake';

export interface IronicInterfaces {
  boot: string;
  deploy: string;
  inspect: string;
  management: string;
  power: string;
  bios?: string;
  raid?: string;
  firmware?: string;
  vendor?: string;
}

export interface BmcCapabilities {
  /** A boot MAC address is required even when inspection is enabled. */
  needsMAC: boolean;
  supportsSecureBoot: boolean;
  /** Virtual media: the preprovisioning (IPA) image can be booted as an ISO. */
  supportsISOPreprovisioningImage: boolean;
  requiresProvisioningNetwork: boolean;
}

export interface BmcAccess {
  type: BmcType;
  /** The address exactly as given. */
  address: string;
  /** The scheme as given, lower-cased; `ipmi` for bare `host[:port]` addresses. */
  scheme: string;
  transport: 'ipmi' | 'http' | 'https' | 'fake';
  /** Host name or IP address, without IPv6 brackets. */
  host: string;
  /** Explicit port, or 623 for IPMI; undefined when not given for other types. */
  port?: number;
  /** '' for IPMI and fake; the Redfish system path (as given) otherwise. */
  path: string;
  /** Ironic hardware type. */
  driver: string;
  interfaces: IronicInterfaces;
  capabilities: BmcCapabilities;
}

export type BmcFamily = 'ipmi' | 'redfish' | 'fake';

export interface BmcTypeInfo {
  family: BmcFamily;
  /** Ironic hardware type (node `driver`). */
  driver: string;
  /**
   * Interfaces the node ends up with. Where BMO leaves an interface empty (so
   * Ironic picks the hardware type's default) the default is recorded here:
   * deploy `direct`, inspect `agent` (BMO's default inspection), and the
   * hardware type's own management/power interfaces.
   */
  interfaces: Readonly<IronicInterfaces>;
  /** Out-of-band inspect interface for BMO's "fast" inspection mode, if any. */
  outOfBandInspect?: string;
  capabilities: Readonly<BmcCapabilities>;
}

const REDFISH_BASE: Readonly<IronicInterfaces> = {
  boot: 'ipxe',
  deploy: 'direct',
  inspect: 'agent',
  management: 'redfish',
  power: 'redfish',
  raid: 'redfish',
  firmware: 'redfish',
};

const IDRAC_BASE: Readonly<IronicInterfaces> = {
  boot: 'ipxe',
  deploy: 'direct',
  inspect: 'agent',
  management: 'idrac-redfish',
  power: 'idrac-redfish',
  bios: 'idrac-redfish',
  raid: 'idrac-redfish',
  firmware: 'redfish',
  vendor: 'idrac-redfish',
};

const PXE_CAPS: Readonly<BmcCapabilities> = {
  needsMAC: false,
  supportsSecureBoot: true,
  supportsISOPreprovisioningImage: false,
  requiresProvisioningNetwork: true,
};

const VMEDIA_CAPS: Readonly<BmcCapabilities> = {
  needsMAC: false,
  supportsSecureBoot: true,
  supportsISOPreprovisioningImage: true,
  requiresProvisioningNetwork: false,
};

function freezeInfo(info: BmcTypeInfo): Readonly<BmcTypeInfo> {
  Object.freeze(info.interfaces);
  Object.freeze(info.capabilities);
  return Object.freeze(info);
}

/** The capability table: one row per BMC type. */
export const BMC_TYPE_TABLE: Readonly<Record<BmcType, Readonly<BmcTypeInfo>>> = Object.freeze({
  ipmi: freezeInfo({
    family: 'ipmi',
    driver: 'ipmi',
    interfaces: { boot: 'ipxe', deploy: 'direct', inspect: 'agent', management: 'ipmitool', power: 'ipmitool', raid: 'no-raid' },
    capabilities: {
      needsMAC: false,
      supportsSecureBoot: false,
      supportsISOPreprovisioningImage: false,
      requiresProvisioningNetwork: true,
    },
  }),
  redfish: freezeInfo({
    family: 'redfish',
    driver: 'redfish',
    interfaces: { ...REDFISH_BASE },
    outOfBandInspect: 'redfish',
    capabilities: { ...PXE_CAPS },
  }),
  'redfish-virtualmedia': freezeInfo({
    family: 'redfish',
    driver: 'redfish',
    interfaces: { ...REDFISH_BASE, boot: 'redfish-virtual-media' },
    outOfBandInspect: 'redfish',
    capabilities: { ...VMEDIA_CAPS },
  }),
  'redfish-uefihttp': freezeInfo({
    family: 'redfish',
    driver: 'redfish',
    interfaces: { ...REDFISH_BASE, boot: 'redfish-https' },
    outOfBandInspect: 'redfish',
    capabilities: { ...VMEDIA_CAPS },
  }),
  'idrac-redfish': freezeInfo({
    family: 'redfish',
    driver: 'idrac',
    interfaces: { ...IDRAC_BASE },
    outOfBandInspect: 'redfish',
    capabilities: { ...PXE_CAPS },
  }),
  'idrac-virtualmedia': freezeInfo({
    family: 'redfish',
    driver: 'idrac',
    interfaces: { ...IDRAC_BASE, boot: 'idrac-redfish-virtual-media' },
    outOfBandInspect: 'redfish',
    capabilities: { ...VMEDIA_CAPS },
  }),
  // BMO dropped the proliantutils-based `ilo5` hardware type; iLO 5 is driven
  // through the generic Redfish hardware type.
  'ilo5-redfish': freezeInfo({
    family: 'redfish',
    driver: 'redfish',
    interfaces: { ...REDFISH_BASE },
    outOfBandInspect: 'redfish',
    capabilities: { ...PXE_CAPS },
  }),
  'ilo5-virtualmedia': freezeInfo({
    family: 'redfish',
    driver: 'redfish',
    interfaces: { ...REDFISH_BASE, boot: 'redfish-virtual-media' },
    outOfBandInspect: 'redfish',
    capabilities: { ...VMEDIA_CAPS },
  }),
  fake: freezeInfo({
    family: 'fake',
    driver: 'fake-hardware',
    interfaces: { boot: 'fake', deploy: 'fake', inspect: 'fake', management: 'fake', power: 'fake' },
    capabilities: {
      needsMAC: true,
      supportsSecureBoot: false,
      supportsISOPreprovisioningImage: false,
      requiresProvisioningNetwork: false,
    },
  }),
});

export const BMC_TYPES: readonly BmcType[] = Object.freeze([
  'ipmi',
  'redfish',
  'redfish-virtualmedia',
  'redfish-uefihttp',
  'idrac-redfish',
  'idrac-virtualmedia',
  'ilo5-redfish',
  'ilo5-virtualmedia',
  'fake',
] as const);

export function isBmcType(value: unknown): value is BmcType {
  return typeof value === 'string' && (BMC_TYPES as readonly string[]).includes(value);
}

interface SchemeEntry {
  type: BmcType;
  transport: BmcAccess['transport'];
}

function buildSchemeTable(): ReadonlyMap<string, SchemeEntry> {
  const table = new Map<string, SchemeEntry>();
  for (const type of BMC_TYPES) {
    const family = BMC_TYPE_TABLE[type].family;
    if (family === 'redfish') {
      // Plain `redfish://` (and friends) means HTTPS, as in BMO.
      table.set(type, { type, transport: 'https' });
      table.set(`${type}+http`, { type, transport: 'http' });
      table.set(`${type}+https`, { type, transport: 'https' });
    } else {
      table.set(type, { type, transport: family });
    }
  }
  return table;
}

const SCHEME_TABLE = buildSchemeTable();

/** Every accepted scheme, for docs and error messages. */
export const BMC_SCHEMES: readonly string[] = Object.freeze([...SCHEME_TABLE.keys()]);

export const DEFAULT_BMC_FIELD = 'spec.bmc.address';
export const DEFAULT_MAC_FIELD = 'spec.bootMACAddress';
export const IPMI_DEFAULT_PORT = 623;

const ACCEPTED_FORMS =
  'accepted forms: host[:port] or ipmi://host[:port] (IPv6 as [addr]:port), ' +
  '<redfish-scheme>://host[:port]/redfish/v1/Systems/<id>, or fake://<name>';

const SCHEME_LIST = `accepted schemes: ${BMC_SCHEMES.join(', ')}`;

// ---------------------------------------------------------------------------
// Host / port / path validation
// ---------------------------------------------------------------------------

function isDigits(s: string): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

function isHexDigit(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
}

function isAlnum(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

/** Dotted-quad IPv4, each octet 0-255 without leading zeros. */
export function isIPv4(s: string): boolean {
  const parts = s.split('.');
  if (parts.length !== 4) return false;
  for (const p of parts) {
    if (!isDigits(p) || p.length > 3) return false;
    if (p.length > 1 && p.charCodeAt(0) === 48) return false;
    if (Number(p) > 255) return false;
  }
  return true;
}

function isHexGroup(s: string): boolean {
  if (s.length < 1 || s.length > 4) return false;
  for (let i = 0; i < s.length; i++) if (!isHexDigit(s.charCodeAt(i))) return false;
  return true;
}

/** IPv6 text form (RFC 4291 §2.2), with `::` compression and a trailing dotted quad; no zone. */
export function isIPv6(s: string): boolean {
  if (s.length < 2 || s.length > 45) return false;
  const dbl = s.indexOf('::');
  if (dbl !== -1 && s.indexOf('::', dbl + 1) !== -1) return false;
  const parts = dbl === -1 ? [s] : [s.slice(0, dbl), s.slice(dbl + 2)];
  let groups = 0;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] ?? '';
    if (part === '') continue;
    const fields = part.split(':');
    for (let j = 0; j < fields.length; j++) {
      const f = fields[j] ?? '';
      const last = i === parts.length - 1 && j === fields.length - 1;
      if (last && f.includes('.')) {
        if (!isIPv4(f)) return false;
        groups += 2;
      } else if (isHexGroup(f)) {
        groups += 1;
      } else {
        return false;
      }
    }
  }
  return dbl === -1 ? groups === 8 : groups <= 7;
}

/** Returns a reason when `host` is not an RFC 1123 DNS name or IPv4 address, else undefined. */
function checkHostname(host: string): string | undefined {
  let numericOnly = true;
  for (let i = 0; i < host.length; i++) {
    const c = host.charCodeAt(i);
    if (c !== 46 && (c < 48 || c > 57)) {
      numericOnly = false;
      break;
    }
  }
  if (numericOnly) {
    return isIPv4(host)
      ? undefined
      : `host "${host}" is not a valid IPv4 address: expected four dot-separated octets 0-255 without leading zeros`;
  }
  if (host.length > 253) {
    return `host name is ${host.length} characters long; DNS names are limited to 253`;
  }
  const labels = host.split('.');
  for (const label of labels) {
    if (label.length === 0) {
      return `host "${host}" has an empty DNS label (leading, trailing or doubled '.')`;
    }
    if (label.length > 63) {
      return `host "${host}" has a DNS label longer than 63 characters`;
    }
    for (let i = 0; i < label.length; i++) {
      const c = label.charCodeAt(i);
      if (!isAlnum(c) && c !== 45) {
        return (
          `host "${host}" contains '${label[i]}'; DNS names may only contain letters, digits, ` +
          `'-' and '.' (RFC 1123), IPv4 addresses are dotted quads and IPv6 addresses go in brackets`
        );
      }
    }
    if (label.charCodeAt(0) === 45 || label.charCodeAt(label.length - 1) === 45) {
      return `host "${host}" has a DNS label that starts or ends with '-' (RFC 1123)`;
    }
  }
  return undefined;
}

/** RFC 3986 pchar plus '/', with well-formed percent-encoding. */
function checkPathChars(path: string): string | undefined {
  for (let i = 0; i < path.length; i++) {
    const c = path.charCodeAt(i);
    if (c === 37) {
      if (!(isHexDigit(path.charCodeAt(i + 1)) && isHexDigit(path.charCodeAt(i + 2)))) {
        return `path "${path}" has a '%' that is not followed by two hex digits`;
      }
      i += 2;
      continue;
    }
    // unreserved: ALPHA DIGIT - . _ ~ ; sub-delims: ! $ & ' ( ) * + , ; = ; plus : @ /
    if (isAlnum(c) || "-._~!$&'()*+,;=:@/".includes(path[i] ?? '')) continue;
    return `path "${path}" contains '${path[i]}', which is not allowed in a URL path`;
  }
  return undefined;
}

interface Authority {
  host: string;
  port?: number;
}

function parseAuthority(authority: string): Result<Authority> | string {
  if (authority.includes('@')) {
    return (
      'the address must not contain user information (user:password@); ' +
      'put the BMC username and password in the credentials secret referenced by spec.bmc.credentialsName'
    );
  }
  if (authority.length === 0) {
    return `host is empty; ${ACCEPTED_FORMS}`;
  }
  let host: string;
  let portText: string | undefined;
  if (authority.startsWith('[')) {
    const close = authority.indexOf(']');
    if (close === -1) return `'[' without a matching ']'; IPv6 addresses are written as [fe80::1] or [fe80::1]:623`;
    host = authority.slice(1, close);
    const after = authority.slice(close + 1);
    if (after.length > 0) {
      if (!after.startsWith(':')) {
        return `unexpected "${after}" after ']'; expected ':<port>' or nothing`;
      }
      portText = after.slice(1);
    }
    if (host.length === 0) return 'host is empty between [ and ]';
    if (host.includes('%')) return `IPv6 zone identifiers ("${host}") are not supported; use an address without a zone`;
    if (!isIPv6(host)) return `"${host}" inside brackets is not a valid IPv6 address`;
  } else {
    if (authority.includes('[') || authority.includes(']')) {
      return `brackets are only allowed around a whole IPv6 address, e.g. [fe80::1]:623`;
    }
    const first = authority.indexOf(':');
    if (first !== -1 && authority.indexOf(':', first + 1) !== -1) {
      return isIPv6(authority)
        ? `IPv6 addresses must be enclosed in brackets, e.g. [${authority}] or [${authority}]:623`
        : `"${authority}" has more than one ':'; expected host[:port] (IPv6 addresses go in brackets)`;
    }
    if (first === -1) {
      host = authority;
    } else {
      host = authority.slice(0, first);
      portText = authority.slice(first + 1);
    }
    if (host.length === 0) return `host is empty; ${ACCEPTED_FORMS}`;
    const hostProblem = checkHostname(host);
    if (hostProblem) return hostProblem;
  }
  if (portText === undefined) return ok({ host });
  if (portText.length === 0) return `port is empty after ':'; give a port 1-65535 or drop the ':'`;
  if (!isDigits(portText)) return `port "${portText}" must be a decimal number 1-65535 (digits only)`;
  const port = portText.length > 5 ? Infinity : Number(portText);
  if (port < 1 || port > 65535) return `port ${portText} is out of range; ports are 1-65535`;
  return ok({ host, port });
}

function describeCodePoint(s: string, index: number): string {
  const cp = s.codePointAt(index) ?? 0;
  return `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
}

// ---------------------------------------------------------------------------
// parseBmcAddress
// ---------------------------------------------------------------------------

/**
 * Parses a BMC address (`spec.bmc.address`) into its access details: type,
 * transport, host, port, Redfish system path, Ironic driver, interfaces and
 * capabilities. Never throws.
 */
export function parseBmcAddress(address: string, field: string = DEFAULT_BMC_FIELD): Result<BmcAccess> {
  if (typeof address !== 'string') {
    return fail(field, `BMC address must be a string; ${ACCEPTED_FORMS}`);
  }
  if (address.length === 0) {
    return fail(field, `BMC address is required; ${ACCEPTED_FORMS}`);
  }
  for (let i = 0; i < address.length; i++) {
    if (/\s/.test(address[i] ?? '')) {
      return fail(field, `BMC address contains whitespace (${describeCodePoint(address, i)}) at position ${i}; remove spaces, tabs and newlines`);
    }
  }
  for (let i = 0; i < address.length; i++) {
    const c = address.charCodeAt(i);
    if (c < 0x20 || c >= 0x7f) {
      return fail(
        field,
        `BMC address contains a control or non-ASCII character (${describeCodePoint(address, i)}) at position ${i}; ` +
          `addresses are ASCII (write internationalized host names in punycode, xn--...)`,
      );
    }
  }
  if (address.includes('?') || address.includes('#')) {
    return fail(field, `BMC address must not contain a query string ('?') or fragment ('#'); ${ACCEPTED_FORMS}`);
  }

  let scheme: string;
  let rest: string;
  const sep = address.indexOf('://');
  if (sep !== -1) {
    const rawScheme = address.slice(0, sep);
    if (rawScheme.length === 0) {
      return fail(field, `BMC address has '://' but no scheme before it; ${SCHEME_LIST}`);
    }
    if (!/^[A-Za-z][A-Za-z0-9+.-]*$/.test(rawScheme)) {
      if (rawScheme.includes('@')) {
        return fail(field, 'the address must not contain user information (user:password@); put the BMC username and password in the credentials secret referenced by spec.bmc.credentialsName');
      }
      return fail(field, `"${rawScheme}" is not a valid URL scheme; ${SCHEME_LIST}`);
    }
    scheme = rawScheme.toLowerCase();
    if (!SCHEME_TABLE.has(scheme)) {
      return fail(field, `unknown BMC scheme "${scheme}"; ${SCHEME_LIST}`);
    }
    rest = address.slice(sep + 3);
  } else {
    const colon = address.indexOf(':');
    if (colon > 0) {
      const prefix = address.slice(0, colon).toLowerCase();
      if (SCHEME_TABLE.has(prefix)) {
        return fail(field, `missing '//' after "${prefix}:"; write ${prefix}://${address.slice(colon + 1)}`);
      }
    }
    scheme = 'ipmi';
    rest = address;
  }

  const entry = SCHEME_TABLE.get(scheme);
  if (!entry) return fail(field, `unknown BMC scheme "${scheme}"; ${SCHEME_LIST}`);
  const info = BMC_TYPE_TABLE[entry.type];

  const slash = rest.indexOf('/');
  const authorityText = slash === -1 ? rest : rest.slice(0, slash);
  const rawPath = slash === -1 ? '' : rest.slice(slash);

  const authority = parseAuthority(authorityText);
  if (typeof authority === 'string') return fail(field, authority);
  if (!authority.ok) return authority;
  const { host } = authority.value;
  let port = authority.value.port;

  const pathProblem = checkPathChars(rawPath);
  if (pathProblem) return fail(field, pathProblem);

  let path: string;
  switch (info.family) {
    case 'ipmi':
      if (rawPath !== '' && rawPath !== '/') {
        return fail(field, `IPMI addresses take no path (got "${rawPath}"); expected ipmi://host[:port] or host[:port]`);
      }
      path = '';
      port = port ?? IPMI_DEFAULT_PORT;
      break;
    case 'fake':
      if (port !== undefined) {
        return fail(field, `fake:// addresses take only a name, not a port; expected fake://<name>`);
      }
      if (rawPath !== '' && rawPath !== '/') {
        return fail(field, `fake:// addresses take only a name, not a path (got "${rawPath}"); expected fake://<name>`);
      }
      path = '';
      break;
    case 'redfish': {
      const trimmed = rawPath.replace(/^\/+/, '').replace(/\/+$/, '');
      const example = `${scheme}://${authorityText}/redfish/v1/Systems/1`;
      if (trimmed === '') {
        return fail(field, `${scheme} addresses need the Redfish system path, e.g. ${example}`);
      }
      if (trimmed.toLowerCase() === 'redfish/v1') {
        return fail(
          field,
          `"${rawPath}" is the Redfish service root, not a system; give the system path, e.g. ${example}`,
        );
      }
      path = rawPath;
      break;
    }
  }

  const access: BmcAccess = {
    type: entry.type,
    address,
    scheme,
    transport: entry.transport,
    host,
    path,
    driver: info.driver,
    interfaces: { ...info.interfaces },
    capabilities: { ...info.capabilities },
  };
  if (port !== undefined) access.port = port;
  return ok(access);
}

// ---------------------------------------------------------------------------
// MAC addresses
// ---------------------------------------------------------------------------

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

/** Host as it appears inside a URL: IPv6 addresses are bracketed. */
export function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}
