/**
 * The pieces of RFC 3986 that addresses given to metalflow are checked
 * against: host (RFC 1123 name, IPv4, bracketed IPv6), port, path characters.
 * Pure and without the `URL` global, so it can be bundled into Temporal
 * workflows; every reason says what is wrong and what is accepted.
 */
import { ok, type Result } from './field-error';

export function isDigits(s: string): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

export function isHexDigit(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
}

export function isAlnum(c: number): boolean {
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
export function checkHostname(host: string): string | undefined {
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
export function checkPathChars(path: string): string | undefined {
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

export interface Authority {
  host: string;
  port?: number;
}

/** How a caller words the two reasons that depend on what the address is for. */
export interface AuthorityWording {
  /** Appended to "host is empty; ". */
  acceptedForms: string;
  /** The whole reason for user information (user:password@) in the address. */
  userInfo: string;
}

/** Host and optional port of an authority (no scheme, no path); a string is the reason it is refused. */
export function parseAuthority(authority: string, wording: AuthorityWording): Result<Authority> | string {
  if (authority.includes('@')) {
    return wording.userInfo;
  }
  if (authority.length === 0) {
    return `host is empty; ${wording.acceptedForms}`;
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
    if (host.length === 0) return `host is empty; ${wording.acceptedForms}`;
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

export function describeCodePoint(s: string, index: number): string {
  const cp = s.codePointAt(index) ?? 0;
  return `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** Host as it appears inside a URL: IPv6 addresses are bracketed. */
export function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}
