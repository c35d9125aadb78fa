/**
 * Another metalflow plane's HTTP API, as a pivot calls it: JSON requests with
 * a bearer token the caller read from a file or Secret. Answers are returned
 * with their status (the pivot branches on 404 and 409); a 5xx or a
 * connection error throws, so the activity is retried. The token is never
 * part of an error.
 */
import { request } from 'undici';

export interface ApiAnswer<T = unknown> {
  status: number;
  body: T;
}

export class MetalflowApi {
  constructor(
    private readonly url: string,
    private readonly token: string,
  ) {}

  async call<T = unknown>(method: 'GET' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<ApiAnswer<T>> {
    const res = await request(`${this.url.replace(/\/+$/, '')}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
    const text = await res.body.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // Not JSON: kept as text for the error.
    }
    if (res.statusCode >= 500) throw new Error(`${method} ${this.url}${path}: ${res.statusCode} ${typeof parsed === 'object' ? JSON.stringify(parsed) : text.slice(0, 200)}`);
    return { status: res.statusCode, body: parsed as T };
  }
}

/** The path of one host under the API. */
export const apiHostPath = (ref: { namespace: string; name: string }, sub = ''): string =>
  `/v1/namespaces/${encodeURIComponent(ref.namespace)}/hosts/${encodeURIComponent(ref.name)}${sub}`;

/** An answer's message for an error: the API's own `message` (never echoing a request body). */
export const answerMessage = (a: ApiAnswer): string =>
  `${a.status} ${typeof a.body === 'object' && a.body !== null && 'message' in a.body ? String((a.body as { message: unknown }).message) : ''}`.trim();
