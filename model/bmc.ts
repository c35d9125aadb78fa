/**
 * BMC address parsing: scheme → BMC type (model/bmc-types.ts), host, port and
 * Redfish system path (checked with model/uri-syntax.ts).
 *
 * Modelled on Metal3 Bare Metal Operator's `pkg/hardwareutils/bmc` package,
 * re-implemented here as a pure, deterministic module: no Node APIs, no I/O,
 * no third-party imports and no `URL` global, so it can be bundled into
 * Temporal workflows.
 *
 * Deliberate differences from BMO (stricter, so mistakes surface at admission):
 * - Redfish-family addresses must name one system, `/redfish/v1/Systems/<id>`
 *   and nothing else (not the service root, the collection, a resource below
 *   the system, '.'/'..' segments or percent-encoding); BMO today also accepts
 *   an empty path or bare `/redfish/v1` and lets Ironic pick the only system.
 * - Query strings are rejected, except BMO's `?privilegelevel=` on IPMI
 *   addresses (`ipmi://`, `libvirt://`, bare host), whose value must be one
 *   Ironic accepts (BMO passes any value on and Ironic refuses it later); the
 *   opaque `ipmi:host` form is rejected too (write `ipmi://host`).
 * - `fake://<name>` is a metalflow extension.
 * - Boot MAC addresses must be 6-octet unicast addresses (model/mac.ts).
 */
import { fail, ok, type Result } from './field-error';
import { BMC_TYPE_TABLE, BMC_TYPES, IPMI_PRIVILEGE_LEVELS, type BmcAccess, type BmcCapabilities, type BmcType, type IronicInterfaces, type IpmiPrivilegeLevel } from './bmc-types';
import { checkPathChars, describeCodePoint, parseAuthority, type AuthorityWording } from './uri-syntax';

// Importers take the whole BMC vocabulary from here.
export * from './bmc-types';
export { DEFAULT_MAC_FIELD, normalizeMac, validateBootMac } from './mac';
export { hostForUrl, isIPv4, isIPv6 } from './uri-syntax';

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

/** Ironic's `ipmi_priv_level` values (ipmitool's `-L`). */

/** An IPMI address's query: only BMO's `privilegelevel`, with a value Ironic accepts. */
function ipmiQuery(query: string, field: string): Result<IpmiPrivilegeLevel | undefined> {
  const accepted = `IPMI addresses take only ?privilegelevel=<${IPMI_PRIVILEGE_LEVELS.join('|')}>`;
  if (query === '') return ok(undefined);
  let level: IpmiPrivilegeLevel | undefined;
  for (const pair of query.split('&')) {
    const eq = pair.indexOf('=');
    const key = eq === -1 ? pair : pair.slice(0, eq);
    const value = eq === -1 ? '' : pair.slice(eq + 1).toUpperCase();
    if (key !== 'privilegelevel') return fail(field, `unknown query parameter "${key}" in the BMC address; ${accepted}`);
    if (level !== undefined) return fail(field, `privilegelevel is given twice in the BMC address; ${accepted}`);
    const known = IPMI_PRIVILEGE_LEVELS.find((l) => l === value);
    if (!known) return fail(field, `privilegelevel "${pair.slice(eq + 1)}" is not one Ironic accepts; ${accepted}`);
    level = known;
  }
  return ok(level);
}
export const IPMI_DEFAULT_PORT = 623;

const ACCEPTED_FORMS =
  'accepted forms: host[:port] or ipmi://host[:port] (IPv6 as [addr]:port), ' +
  '<redfish-scheme>://host[:port]/redfish/v1/Systems/<id>, or fake://<name>';

const SCHEME_LIST = `accepted schemes: ${BMC_SCHEMES.join(', ')}`;

const USER_INFO =
  'the address must not contain user information (user:password@); ' +
  'put the BMC username and password in the credentials secret referenced by spec.bmc.credentialsName';

const BMC_WORDING: AuthorityWording = { acceptedForms: ACCEPTED_FORMS, userInfo: USER_INFO };

// ---------------------------------------------------------------------------
// parseBmcAddress
// ---------------------------------------------------------------------------

const SYSTEM_ID = /^[A-Za-z0-9._~-]+$/;

/**
 * Why a Redfish path is not one system's (`/redfish/v1/Systems/<id>`, one
 * trailing '/' allowed), or undefined. The id is one segment of RFC 3986
 * unreserved characters, as Redfish ids are: no '.' or '..' segments, no
 * percent-encoding (an encoded '/' or '.' could name another resource once a
 * client or proxy decodes it), nothing below the system.
 */
function systemPathProblem(rawPath: string, example: string, scheme: string): string | undefined {
  const accepted = `give the Redfish system path /redfish/v1/Systems/<id> (the id: letters, digits, '-', '.', '_', '~'), e.g. ${example}`;
  if (rawPath === '' || rawPath === '/') return `${scheme} addresses need the Redfish system path, e.g. ${example}`;
  const segments = (rawPath.endsWith('/') ? rawPath.slice(0, -1) : rawPath).split('/').slice(1);
  if (segments.some((s) => s === '')) return `path "${rawPath}" has an empty segment ('//'); ${accepted}`;
  if (segments.some((s) => s === '.' || s === '..')) return `path "${rawPath}" has a '.' or '..' segment; ${accepted}`;
  if (rawPath.includes('%')) return `path "${rawPath}" is percent-encoded; Redfish system paths are plain, ${accepted}`;
  const lower = segments.map((s) => s.toLowerCase());
  if (lower[0] === 'redfish' && segments.length <= 2 && (lower[1] ?? 'v1') === 'v1') {
    return `"${rawPath}" is the Redfish service root, not a system; ${accepted}`;
  }
  if (segments[0] !== 'redfish' || segments[1] !== 'v1' || segments[2] !== 'Systems') {
    return `path "${rawPath}" is not a Redfish system; ${accepted}`;
  }
  if (segments.length === 3) return `"${rawPath}" is the Systems collection, not a system; ${accepted}`;
  if (segments.length > 4) return `path "${rawPath}" names something below a system; ${accepted}`;
  if (!SYSTEM_ID.test(segments[3]!)) return `system id "${segments[3]}" has characters Redfish ids do not use; ${accepted}`;
  return undefined;
}

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
  if (address.includes('#')) {
    return fail(field, `BMC address must not contain a fragment ('#'); ${ACCEPTED_FORMS}`);
  }
  const question = address.indexOf('?');
  const query = question === -1 ? undefined : address.slice(question + 1);
  const target = question === -1 ? address : address.slice(0, question);

  let scheme: string;
  let rest: string;
  const sep = target.indexOf('://');
  if (sep !== -1) {
    const rawScheme = target.slice(0, sep);
    if (rawScheme.length === 0) {
      return fail(field, `BMC address has '://' but no scheme before it; ${SCHEME_LIST}`);
    }
    if (!/^[A-Za-z][A-Za-z0-9+.-]*$/.test(rawScheme)) {
      if (rawScheme.includes('@')) {
        return fail(field, USER_INFO);
      }
      return fail(field, `"${rawScheme}" is not a valid URL scheme; ${SCHEME_LIST}`);
    }
    scheme = rawScheme.toLowerCase();
    if (!SCHEME_TABLE.has(scheme)) {
      return fail(field, `unknown BMC scheme "${scheme}"; ${SCHEME_LIST}`);
    }
    rest = target.slice(sep + 3);
  } else {
    const colon = target.indexOf(':');
    if (colon > 0) {
      const prefix = target.slice(0, colon).toLowerCase();
      if (SCHEME_TABLE.has(prefix)) {
        return fail(field, `missing '//' after "${prefix}:"; write ${prefix}://${target.slice(colon + 1)}`);
      }
    }
    scheme = 'ipmi';
    rest = target;
  }

  const entry = SCHEME_TABLE.get(scheme);
  if (!entry) return fail(field, `unknown BMC scheme "${scheme}"; ${SCHEME_LIST}`);
  const info = BMC_TYPE_TABLE[entry.type];
  let privilegeLevel: IpmiPrivilegeLevel | undefined;
  if (query !== undefined) {
    if (info.family !== 'ipmi') {
      return fail(field, `${scheme} addresses must not contain a query string ('?'); only IPMI addresses take ?privilegelevel=; ${ACCEPTED_FORMS}`);
    }
    const level = ipmiQuery(query, field);
    if (!level.ok) return level;
    privilegeLevel = level.value;
  }

  const slash = rest.indexOf('/');
  const authorityText = slash === -1 ? rest : rest.slice(0, slash);
  const rawPath = slash === -1 ? '' : rest.slice(slash);

  const authority = parseAuthority(authorityText, BMC_WORDING);
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
      const problem = systemPathProblem(rawPath, `${scheme}://${authorityText}/redfish/v1/Systems/1`, scheme);
      if (problem) return fail(field, problem);
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
  if (privilegeLevel !== undefined) access.privilegeLevel = privilegeLevel;
  return ok(access);
}
