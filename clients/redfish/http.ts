/**
 * The HTTP layer of the Redfish client: one undici request with a timeout,
 * and the translation of network failures and HTTP error statuses into
 * `RedfishError`s whose messages say what happened (and never the password).
 */
import { RedfishError, type BmcErrorKind } from '../bmc/errors';
import { tlsFailure } from '../tls/tls-error';

export type Json = Record<string, unknown>;

export interface RedfishResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body, `{}` when the body is empty or not JSON. */
  body: Json;
  text: string;
}

export function header(res: RedfishResponse, name: string): string | undefined {
  const v = res.headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

export const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
export const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
export const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
export const odataId = (v: unknown): string | undefined => str(obj(v)['@odata.id']);

export function parseJson(text: string): Json {
  if (!text) return {};
  try {
    return obj(JSON.parse(text));
  } catch {
    return {};
  }
}

/**
 * The human part of a Redfish error body: `error.message` and every
 * `@Message.ExtendedInfo[].Message` (falling back to MessageId), or a short
 * excerpt of a non-JSON body.
 */
export function redfishErrorDetail(res: Pick<RedfishResponse, 'body' | 'text'>): string {
  const error = obj(res.body.error);
  const parts: string[] = [];
  const top = str(error.message);
  const code = str(error.code);
  if (top) parts.push(code ? `${code}: ${top}` : top);
  const info = [...arr(error['@Message.ExtendedInfo']), ...arr(res.body['@Message.ExtendedInfo'])];
  for (const item of info) {
    const m = obj(item);
    const text = str(m.Message);
    const id = str(m.MessageId);
    const part = text && id ? `${id}: ${text}` : (text ?? id);
    // skip repeats of the top-level message and bare ids already named
    if (!part || parts.some((p) => p.includes(text ?? part))) continue;
    parts.push(part);
  }
  if (parts.length === 0 && res.text && !res.text.trimStart().startsWith('{')) {
    parts.push(res.text.replace(/\s+/g, ' ').trim().slice(0, 200));
  }
  return parts.join('; ');
}

/** MessageIds of a Redfish error body, for classification. */
export function redfishMessageIds(body: Json): string[] {
  const error = obj(body.error);
  const ids = [str(error.code)];
  for (const item of [...arr(error['@Message.ExtendedInfo']), ...arr(body['@Message.ExtendedInfo'])]) {
    ids.push(str(obj(item).MessageId));
  }
  return ids.filter((x): x is string => x !== undefined);
}

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_FAIL', 'EAI_NODATA']);

/** A network-level failure (no HTTP status) as a typed error. */
export function networkError(err: unknown, target: string, timeoutMs: number): RedfishError {
  const e = (err ?? {}) as { code?: unknown; name?: unknown; message?: unknown; cause?: unknown };
  const cause = (e.cause ?? {}) as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : typeof cause.code === 'string' ? cause.code : '';
  const name = typeof e.name === 'string' ? e.name : '';
  const message = typeof e.message === 'string' ? e.message : String(err);
  const make = (kind: BmcErrorKind, text: string) => new RedfishError(kind, `cannot reach Redfish BMC at ${target}: ${text}`);
  const tls = tlsFailure(err);
  if (tls) {
    const hint = tls.notTls
      ? ' (the port does not speak TLS: use a redfish+http:// address if the BMC serves plain HTTP)'
      : ' (set disableCertificateVerification to skip verification, or give the CA: METALFLOW_BMC_CACERT_FILE)';
    return new RedfishError('tls', `TLS with Redfish BMC at ${target} failed: ${tls.reason} (${tls.code})${hint}`);
  }
  if (DNS_CODES.has(code)) return make('unreachable', `DNS lookup of the BMC host failed (${code})`);
  if (code === 'ECONNREFUSED') return make('unreachable', 'connection refused (ECONNREFUSED): nothing listens on that port');
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return make('unreachable', `no route to the BMC (${code})`);
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ETIMEDOUT') {
    return make('unreachable', `no TCP connection within ${timeoutMs} ms (timeout)`);
  }
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || name === 'TimeoutError' || name === 'AbortError') {
    return make('unreachable', `no response within ${timeoutMs} ms (timeout)`);
  }
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET' || code === 'UND_ERR_CLOSED') {
    return make('unreachable', `the connection was closed by the BMC (${code})`);
  }
  return make('unreachable', `${message}${code ? ` (${code})` : ''}`);
}

const UNSUPPORTED_IDS = /NotSupported|NotInList|ActionParameterUnknown|PropertyUnknown|PropertyNotWritable|ActionNotSupported/;

/** An HTTP error status as a typed error. */
export function httpError(method: string, url: string, res: RedfishResponse, username: string): RedfishError {
  const detail = redfishErrorDetail(res);
  const where = `Redfish ${method} ${url}: HTTP ${res.status}`;
  const tail = detail ? `: ${detail}` : '';
  const s = res.status;
  if (s === 401 || s === 403) {
    const why = s === 401 ? 'the BMC rejected the credentials' : 'the BMC denied access';
    return new RedfishError('bad-credentials', `${where}: ${why} of user "${username}"${tail}`, s);
  }
  if (s === 404) return new RedfishError('not-found', `${where}: no such resource${tail}`, s);
  if (s === 405 || s === 501) return new RedfishError('unsupported', `${where}: the BMC does not support this${tail}`, s);
  if (s === 400 || s === 422) {
    const unsupported = redfishMessageIds(res.body).some((id) => UNSUPPORTED_IDS.test(id));
    return new RedfishError(unsupported ? 'unsupported' : 'rejected', `${where}: the BMC refused the request${tail}`, s);
  }
  if (s === 428) return new RedfishError('rejected', `${where}: the BMC requires a precondition (If-Match)${tail}`, s);
  if (s >= 500) return new RedfishError('bmc-fault', `${where}: BMC error${tail}`, s);
  return new RedfishError('bmc-fault', `${where}: unexpected status${tail}`, s);
}
