/**
 * Why an image (or its checksum file) cannot be used, as a typed error the
 * activity maps to a Temporal failure. Messages name the URL's host and file
 * name only: the query string of a pre-signed URL is a credential.
 */
import { FAILURE, type FailureClass } from '../../model/failures';
import { tlsFailure } from '../tls/tls-error';
import { addressRefused } from './address-policy';

export type ImageErrorType =
  /** 404 or 410: no such file. */
  | 'not-found'
  /** Any other HTTP error status (401/403 included: metalflow sends no credentials). */
  | 'http-error'
  /** The server's certificate is not trusted, or the port does not speak TLS. */
  | 'tls'
  /** No HTTP answer: DNS, refused, reset, timed out. May pass on its own. */
  | 'unreachable'
  /** The server answered 5xx or 429: busy or broken for now. May pass on its own. */
  | 'unavailable'
  /** The server answered 200 with an HTML page (a login or error page), not an image. */
  | 'html-page'
  /** The first bytes do not fit spec.image.format. */
  | 'format-mismatch'
  /** The checksum file is not one (too big, binary, no hash in it). */
  | 'checksum-file'
  /** The checksum file has no line for the image's file name. */
  | 'checksum-missing'
  /** The whole image was read and its hash is not the one given (the partial download is deleted). */
  | 'checksum-mismatch'
  /** The image cache cannot take it (not configured on the worker, no checksum to verify, bigger than the cache). */
  | 'cache'
  /** The URL's host is (or resolves to) an address the worker's fetch policy refuses: loopback, link-local, its own listeners. */
  | 'address-refused';

/** Types that may pass on their own (the activity retries them); the others need a spec change. */
export const TRANSIENT_IMAGE_ERRORS: ReadonlySet<ImageErrorType> = new Set(['unreachable', 'unavailable']);

export class ImageError extends Error {
  override readonly name = 'ImageError';
  constructor(
    readonly type: ImageErrorType,
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** An image's errors in the closed set the workflows branch on: what may pass is retried, the rest is ImageUnusable with its type. */
export function imageFailureClass(err: ImageError): FailureClass {
  if (TRANSIENT_IMAGE_ERRORS.has(err.type)) return { type: FAILURE.transient, retryable: true, details: { type: err.type } };
  return { type: FAILURE.imageUnusable, retryable: false, details: { type: err.type } };
}

/** `host` and `…/file` of a URL, never its query string. */
export function where(url: string): string {
  try {
    const u = new URL(url);
    const file = u.pathname.split('/').filter(Boolean).pop();
    return file ? `${u.host} (…/${decodeURIComponent(file)})` : u.host;
  } catch {
    return 'an unparsable URL';
  }
}

/** An HTTP error status as an ImageError; 5xx and 429 may pass. */
export function statusError(what: string, url: string, status: number): ImageError {
  if (status === 404 || status === 410) return new ImageError('not-found', `${what} at ${where(url)}: HTTP ${status}, no such file`, status);
  const hint =
    status === 401 || status === 403
      ? ' (metalflow and Ironic send no credentials: use a pre-signed URL or a server that needs none)'
      : status === 416
        ? ' (not even its first byte could be read: the file is most likely empty)'
        : '';
  const transient = status >= 500 || status === 429;
  return new ImageError(transient ? 'unavailable' : 'http-error', `${what} at ${where(url)}: HTTP ${status}${hint}`, status);
}

/** A request that got no HTTP answer, as an ImageError that never quotes the URL. */
export function networkError(what: string, url: string, err: unknown): ImageError {
  const refused = addressRefused(err);
  if (refused) return new ImageError('address-refused', `${what} at ${where(url)}: ${refused.message}`);
  const tls = tlsFailure(err);
  if (tls) {
    const hint = tls.notTls ? 'the port does not speak TLS (an http:// URL?)' : tls.untrusted ? 'its certificate is not signed by a CA the worker trusts (METALFLOW_IMAGE_CACERT_FILE)' : 'see the reason';
    return new ImageError('tls', `${what} at ${where(url)}: TLS failed: ${tls.reason} (${tls.code}); ${hint}`);
  }
  const e = (err ?? {}) as { code?: unknown; cause?: { code?: unknown } };
  const code = typeof e.code === 'string' ? e.code : typeof e.cause?.code === 'string' ? e.cause.code : 'no code';
  const text = err instanceof Error ? err.message.replace(/https?:\/\/\S+/g, '<url>') : String(err);
  return new ImageError('unreachable', `${what} at ${where(url)}: no answer: ${text} (${code})`);
}
