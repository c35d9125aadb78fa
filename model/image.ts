/**
 * `spec.image`: the URL Ironic (or, with `provisioner: direct`, the BMC's
 * virtual media) downloads, and its checksum. Pure, bundled into workflows.
 *
 * Schemes: Ironic's image services take http(s), file, oci, glance, nfs and
 * cifs/smb hrefs, and Metal3's webhook lets http, https, ftp, gopher and oci
 * through. metalflow accepts http, https and oci (an image in an OCI registry,
 * `oci://registry[:port]/repository[:tag|@digest]`, pulled by Ironic itself with
 * the credentials of `ociAuthSecretName`; its checksum is optional, the
 * registry's digest vouches for it):
 * - `file://` reads a path on the Ironic conductor's own disk (within
 *   `file_url_allowed_paths`): not for an API caller to choose;
 * - ftp and gopher Ironic cannot download; glance, nfs and cifs are not part of
 *   a Metal3 deployment.
 */
import type { FieldError } from './field-error';
import type { Image } from './host';
import { isAlnum, isHexDigit, parseAuthority, type AuthorityWording } from './uri-syntax';

const HEX_LENGTH = { md5: 32, sha256: 64, sha512: 128 } as const;

const FORM = 'expected http://host[:port]/path or https://host[:port]/path (a query string is fine), or oci://registry[:port]/repository[:tag]';

const WORDING: AuthorityWording = {
  acceptedForms: FORM,
  userInfo: 'credentials in the URL (user:password@) are not accepted: they would be stored and logged with the spec; use a pre-signed URL or a server that needs none',
};

const OTHER_SCHEMES: Record<string, string> = {
  file: "file:// names a file on the Ironic conductor's own disk, which an API caller may not choose; serve the image over http(s)",
};

/**
 * RFC 3986 path (pchar / "/") or query (also "?") characters with well-formed
 * percent-encoding. Reasons never quote the URL: a pre-signed one is a credential.
 */
function componentProblem(text: string, what: 'path' | 'query string'): string | undefined {
  const extra = what === 'path' ? "-._~!$&'()*+,;=:@/" : "-._~!$&'()*+,;=:@/?";
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 37) {
      if (!(isHexDigit(text.charCodeAt(i + 1)) && isHexDigit(text.charCodeAt(i + 2)))) {
        return `the ${what} has a '%' that is not followed by two hex digits`;
      }
      i += 2;
    } else if (!isAlnum(c) && !extra.includes(text[i] ?? '')) {
      return `the ${what} contains '${text[i]}', which must be percent-encoded`;
    }
  }
  return undefined;
}

/** An image in an OCI registry, which Ironic pulls itself (checksum optional, credentials from ociAuthSecretName). */
export const isOciUrl = (url: string): boolean => /^oci:\/\//i.test(url);

/** Why `url` is not an http(s) URL with a valid host and port, or undefined. */
export function httpUrlProblem(url: string): string | undefined {
  return urlProblem(url, false);
}

/** Why `url` is not an http(s) URL (or with `oci`, also an oci:// reference) with a valid host and port, or undefined. */
function urlProblem(url: string, oci: boolean): string | undefined {
  for (let i = 0; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f) {
      return `contains a space, control or non-ASCII character at position ${i}; percent-encode it (${FORM})`;
    }
  }
  const sep = url.indexOf('://');
  const scheme = sep > 0 ? url.slice(0, sep).toLowerCase() : '';
  if (scheme !== 'http' && scheme !== 'https' && !(oci && scheme === 'oci')) {
    if (scheme === '') return `is not an http:// or https:// URL; ${FORM}`;
    if (scheme === 'oci') return `oci:// names an image, not this; ${FORM}`;
    return OTHER_SCHEMES[scheme] ?? `${scheme}:// is not accepted: images are downloaded over http:// or https://, or pulled from an OCI registry (oci://)`;
  }
  const rest = url.slice(sep + 3);
  const hash = rest.indexOf('#');
  if (hash !== -1) return `has a fragment ('#…'), which is never sent to the server; remove it or percent-encode '#' as %23`;
  const end = rest.search(/[/?]/);
  const authority = end === -1 ? rest : rest.slice(0, end);
  const parsed = parseAuthority(authority, WORDING);
  if (typeof parsed === 'string') return parsed;
  if (!parsed.ok) return parsed.errors[0]?.reason;
  const tail = end === -1 ? '' : rest.slice(end);
  if (scheme === 'oci' && !/^\/[^/?]/.test(tail)) return 'names no repository: expected oci://registry[:port]/repository[:tag] or …@sha256:<digest>';
  if (scheme === 'oci' && tail.includes('?')) return 'has a query string, which an OCI reference does not have: expected oci://registry[:port]/repository[:tag]';
  const q = tail.indexOf('?');
  const path = q === -1 ? tail : tail.slice(0, q);
  return componentProblem(path, 'path') ?? (q === -1 ? undefined : componentProblem(tail.slice(q + 1), 'query string'));
}

function checksumErrors(image: Image): FieldError[] {
  const field = 'spec.image.checksum';
  const checksum = image.checksum ?? '';
  if (checksum === '') {
    if (image.format === 'live-iso' || isOciUrl(image.url)) return [];
    return [{ field, reason: 'is required unless format is live-iso or the image is an oci:// reference: give the hex digest of the image or the URL of a checksum file' }];
  }
  if (/^https?:\/\//i.test(checksum)) {
    const problem = httpUrlProblem(checksum);
    return problem ? [{ field, reason: `is not a valid http(s) checksum-file URL: ${problem}` }] : [];
  }
  if (!/^[0-9a-fA-F]+$/.test(checksum)) {
    return [{ field, reason: 'must be a hexadecimal digest (md5: 32, sha256: 64, sha512: 128 characters) or an http(s) URL of a checksum file' }];
  }
  const type = image.checksumType ?? 'auto';
  if (type === 'auto') {
    if (!Object.values(HEX_LENGTH).includes(checksum.length as 32 | 64 | 128)) {
      return [{ field, reason: `a ${checksum.length}-character digest matches no supported algorithm (md5: 32, sha256: 64, sha512: 128)` }];
    }
  } else if (checksum.length !== HEX_LENGTH[type]) {
    return [{ field, reason: `a ${type} digest has ${HEX_LENGTH[type]} hex characters, this one has ${checksum.length}` }];
  }
  return [];
}

export function validateImage(image: Image): FieldError[] {
  const problem = urlProblem(image.url, true);
  return [...(problem ? [{ field: 'spec.image.url', reason: problem }] : []), ...checksumErrors(image)];
}
