/**
 * The HTTP side of image I/O over undici, as the rest of metalflow speaks
 * HTTP: one Agent per worker (the system's CAs, or the bundle given), redirects
 * followed (images often sit behind one: object stores, release pages), and a
 * timeout on every request. Bodies are streamed and cut off at the bytes wanted:
 * nothing beyond that is read or held.
 */
import { isIP } from 'node:net';
import { Agent, buildConnector, interceptors, request, type Dispatcher } from 'undici';
import { ImageError, networkError, statusError, where } from './errors';
import { policyLookup, refusal, type AddressPolicy } from './address-policy';

export interface ImageHttpOptions {
  /** CA bundle (PEM) the image servers' certificates are checked against; the system's CAs when unset. */
  ca?: Buffer;
  /** Per request: connecting, the headers, and each pause in the body. */
  timeoutMs?: number;
  /** Addresses refused after DNS and on every redirect hop (the worker's METALFLOW_IMAGE_FETCH_*); none: any address. */
  policy?: AddressPolicy;
  /** Overrides the Agent built from the options above (tests). */
  dispatcher?: Dispatcher;
}

const defaultPort = (protocol: string): number => (protocol === 'https:' ? 443 : 80);

/** undici's connector with the policy checked on the address each connection is about to use. */
function policyConnector(policy: AddressPolicy, base: buildConnector.BuildOptions): buildConnector.connector {
  const byPort = new Map<number, buildConnector.connector>();
  return (opts, callback) => {
    const port = Number(opts.port) || defaultPort(opts.protocol);
    const host = opts.hostname.replace(/^\[|\]$/g, '');
    // An address literal is never looked up: checked here instead.
    if (isIP(host)) {
      const refused = refusal(policy, host, port);
      if (refused) return callback(refused, null);
    }
    let connect = byPort.get(port);
    if (!connect) {
      connect = buildConnector({ ...base, lookup: policyLookup(policy, () => port) } as buildConnector.BuildOptions);
      byPort.set(port, connect);
    }
    return connect(opts, callback);
  };
}

export const DEFAULT_IMAGE_TIMEOUT_MS = 30_000;

/** What each dispatcher was built from: whole-image downloads go through Node's client with the same CAs and timeout (node-get.ts). */
const builtFrom = new WeakMap<Dispatcher, ImageHttpOptions>();

export function imageDispatcher(opts: ImageHttpOptions = {}): Dispatcher {
  if (opts.dispatcher) return opts.dispatcher;
  const timeout = opts.timeoutMs ?? DEFAULT_IMAGE_TIMEOUT_MS;
  const connect = { timeout, ...(opts.ca ? { ca: opts.ca } : {}) };
  const dispatcher = new Agent({
    connect: opts.policy ? policyConnector(opts.policy, connect) : connect,
    headersTimeout: timeout,
    bodyTimeout: timeout,
  }).compose(interceptors.redirect({ maxRedirections: 5 }));
  builtFrom.set(dispatcher, { ...(opts.ca ? { ca: opts.ca } : {}), ...(opts.policy ? { policy: opts.policy } : {}), timeoutMs: timeout });
  return dispatcher;
}

/** The CA bundle and timeout `dispatcher` was built with (none known: the system's CAs, the default timeout). */
export const imageHttpOptionsOf = (dispatcher: Dispatcher): ImageHttpOptions => builtFrom.get(dispatcher) ?? {};

export interface Answer {
  status: number;
  headers: Record<string, string | undefined>;
  /** At most `maxBytes` of the body (nothing for HEAD). */
  body: Buffer;
  /** The body reached `maxBytes` and the rest was not read. */
  truncated: boolean;
}

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/**
 * Sends one request and checks its status: an HTTP error status is thrown as
 * an ImageError, so is a request that got no answer; `refusedOk` lists
 * statuses returned instead of thrown (their body already discarded).
 */
export async function openImageRequest(
  dispatcher: Dispatcher,
  what: string,
  url: string,
  init: { method: 'HEAD' | 'GET'; headers?: Record<string, string>; refusedOk?: (status: number) => boolean },
): Promise<{ res: Dispatcher.ResponseData; headers: Record<string, string | undefined> }> {
  let res: Dispatcher.ResponseData;
  try {
    res = await request(url, { method: init.method, headers: init.headers ?? {}, dispatcher });
  } catch (err) {
    if (err instanceof Error && /redirect loop/i.test(err.message)) {
      throw new ImageError('http-error', `the ${what} at ${where(url)}: a redirect loop (a redirect back to a URL already visited)`);
    }
    throw networkError(`the ${what}`, url, err);
  }
  const headers = Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k.toLowerCase(), one(v)]));
  if (res.statusCode >= 400) {
    await res.body.dump().catch(() => undefined);
    if (init.refusedOk?.(res.statusCode)) return { res, headers };
    throw statusError(`the ${what}`, url, res.statusCode);
  }
  if (res.statusCode >= 300) {
    // What the redirect interceptor hands back: a sixth redirect, or one without a Location.
    await res.body.dump().catch(() => undefined);
    throw new ImageError('http-error', `the ${what} at ${where(url)}: HTTP ${res.statusCode}: more than 5 redirects, or a redirect without a Location`, res.statusCode);
  }
  return { res, headers };
}

/**
 * One request (openImageRequest) and at most `maxBytes` of its body; `what`
 * names the thing fetched in errors ("image", "checksum file").
 */
export async function fetchStart(
  dispatcher: Dispatcher,
  what: string,
  url: string,
  init: { method: 'HEAD' | 'GET'; headers?: Record<string, string>; maxBytes: number; refusedOk?: (status: number) => boolean },
): Promise<Answer> {
  const { res, headers } = await openImageRequest(dispatcher, what, url, init);
  if (res.statusCode >= 400) return { status: res.statusCode, headers, body: Buffer.alloc(0), truncated: false };
  if (init.method === 'HEAD') {
    await res.body.dump().catch(() => undefined);
    return { status: res.statusCode, headers, body: Buffer.alloc(0), truncated: false };
  }
  const chunks: Buffer[] = [];
  let length = 0;
  let truncated = false;
  try {
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      length += chunk.length;
      if (length >= init.maxBytes) {
        // Breaking out of the iteration destroys the stream: the rest is never downloaded.
        truncated = true;
        break;
      }
    }
  } catch (err) {
    throw networkError(`the ${what}`, url, err);
  }
  return { status: res.statusCode, headers, body: Buffer.concat(chunks, length).subarray(0, init.maxBytes), truncated };
}
