/**
 * The HTTP side of the Ironic client over undici: microversion negotiation,
 * Ironic's doubly-encoded error bodies turned into typed errors, and TLS
 * failures said by name. IronicClient (client.ts) adds the API's calls.
 */
import { Agent, request, type Dispatcher } from 'undici';
import type { TlsMaterial } from '../tls/files';
import { probeTls } from '../tls/probe';
import { tlsFailure } from '../tls/tls-error';
import { IronicError, ironicConflict, ironicErrorMessage, isIronicErrorBody, missingNodeOf, refusalHint, retryAfterMs } from './errors';
import { compareMicroversions, REQUIRED_MICROVERSION } from './microversions';

export interface IronicClientOptions {
  url: string;
  /** For `auth_strategy = http_basic`; omit for noauth. */
  basicAuth?: { username: string; password: string };
  requestTimeoutMs?: number;
  /** An https Ironic: the CA bundle it is verified against (else the system's), and a client certificate for mTLS. */
  tls?: TlsMaterial;
  /** Overrides the client's own undici Agent (then `tls` is ignored). */
  dispatcher?: Dispatcher;
  /** Nodes per page when listing; Ironic's `[api] max_limit` (1000) by default. */
  listPageSize?: number;
}

/** The connection closed under a request before any answer (a keep-alive connection the server had just dropped). */
const droppedConnection = (err: unknown): boolean => {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'UND_ERR_SOCKET' || code === 'ECONNRESET';
};

/** undici gave up waiting for the answer's headers or body: the request had gone out. */
const timedOut = (err: unknown): boolean => {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT';
};

export class IronicTransport {
  private readonly base: string;
  private readonly headers: Record<string, string>;
  private readonly dispatcher: Dispatcher;
  private readonly timeout: number;
  private negotiated?: Promise<string>;
  /** The newest API version the server speaks, read with the negotiation. */
  protected serverMax?: string;
  protected readonly pageSize: number;
  private readonly tls?: TlsMaterial;

  constructor(opts: IronicClientOptions) {
    this.base = opts.url.replace(/\/+$/, '');
    this.timeout = opts.requestTimeoutMs ?? 30_000;
    this.pageSize = opts.listPageSize ?? 1000;
    this.tls = opts.tls;
    this.dispatcher = opts.dispatcher ?? new Agent({ connections: 32, keepAliveTimeout: 10_000, ...(opts.tls ? { connect: { ...opts.tls } } : {}) });
    this.headers = { accept: 'application/json' };
    if (opts.basicAuth) {
      const token = Buffer.from(`${opts.basicAuth.username}:${opts.basicAuth.password}`).toString('base64');
      this.headers.authorization = `Basic ${token}`;
    }
  }

  /** Where this client sends its requests (without any user information the URL held). */
  get where(): string {
    const url = new URL(this.base);
    url.username = '';
    url.password = '';
    return url.toString().replace(/\/$/, '');
  }

  /** Reads the server's supported range once and fails clearly if it is too old. */
  microversion(): Promise<string> {
    this.negotiated ??= this.negotiate().catch((err: unknown) => {
      this.negotiated = undefined;
      throw err;
    });
    return this.negotiated;
  }

  /** The newest API version Ironic serves, asked now (the negotiated one is kept). */
  async serverVersion(): Promise<string> {
    const root = await this.send<{ version?: { version?: string; min_version?: string } }>('GET', '/v1/', undefined, false);
    const max = root.version?.version;
    if (!max) throw new IronicError('unavailable', `Ironic at ${this.base} did not report its API version on GET /v1/`);
    return max;
  }

  private async negotiate(): Promise<string> {
    const max = await this.serverVersion();
    if (compareMicroversions(max, REQUIRED_MICROVERSION) < 0) {
      throw new IronicError(
        'too-old',
        `Ironic at ${this.base} supports API up to ${max}; metalflow needs ${REQUIRED_MICROVERSION} or newer (Ironic 2023.1 / 21.4 or later)`,
      );
    }
    this.serverMax = max;
    return REQUIRED_MICROVERSION;
  }

  /** Whether the server speaks `version` (read with the negotiation). */
  async supports(version: string): Promise<boolean> {
    await this.microversion();
    return this.serverMax !== undefined && compareMicroversions(this.serverMax, version) >= 0;
  }

  /** `version` when the server speaks it; otherwise a too-old error naming what needs it and both versions. */
  async requireVersion(version: string, what: string): Promise<string> {
    if (await this.supports(version)) return version;
    throw new IronicError('too-old', `${what} needs Ironic API ${version} or newer; Ironic at ${this.where} supports up to ${this.serverMax ?? 'an unknown version'}`);
  }

  /** `version`: false for the unversioned root, true for the negotiated microversion, or a newer one a call needs. */
  protected async send<T>(method: Dispatcher.HttpMethod, path: string, body?: unknown, version: boolean | string = true): Promise<T> {
    const headers: Record<string, string> = { ...this.headers };
    if (typeof version === 'string') headers['x-openstack-ironic-api-version'] = version;
    else if (version) headers['x-openstack-ironic-api-version'] = await this.microversion();
    if (body !== undefined) headers['content-type'] = 'application/json';
    const send = () =>
      request(`${this.base}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        dispatcher: this.dispatcher,
        headersTimeout: this.timeout,
        bodyTimeout: this.timeout,
      });
    let res: Dispatcher.ResponseData;
    try {
      res = await send().catch((err: unknown) => {
        // Ironic may close an idle keep-alive connection just as a request goes out on it
        // ("other side closed", seen in a test run): a read is sent once more, on a new one.
        if (method === 'GET' && droppedConnection(err)) return send();
        throw err;
      });
    } catch (err) {
      throw await this.unreachable(err, method, path);
    }
    let text: string;
    try {
      text = await res.body.text();
    } catch (err) {
      throw await this.unreachable(err, method, path);
    }
    if (res.statusCode < 300) {
      if (!text) return undefined as T;
      try {
        return JSON.parse(text) as T;
      } catch {
        // A proxy's page or a truncated body: typed, so it is not retried as if Ironic were busy.
        throw new IronicError('bad-answer', `Ironic ${method} ${path.split('?')[0]}: HTTP ${res.statusCode} with a body that is not JSON (${JSON.stringify(text.slice(0, 80))})`, res.statusCode);
      }
    }
    const message = `Ironic ${method} ${path.split('?')[0]}: HTTP ${res.statusCode}: ${ironicErrorMessage(text)}`;
    switch (res.statusCode) {
      case 404:
        throw new IronicError('not-found', message, 404, missingNodeOf(path, message));
      case 409: {
        // Only a locked node's 409 passes by asking again; a name or MAC taken is the caller's to judge; the rest
        // (InvalidState and its kin) are refusals: final, named by Ironic's message (ironicConflict).
        const conflict = ironicConflict(text);
        if (conflict === 'refused') {
          const hint = refusalHint(text);
          throw new IronicError('rejected', hint ? `${message} (${hint})` : message, 409);
        }
        throw new IronicError('conflict', message, 409, undefined, undefined, { locked: conflict === 'locked' });
      }
      case 406:
        throw new IronicError('too-old', message, 406);
      case 400:
      case 422:
        throw new IronicError('rejected', message, res.statusCode);
      case 401:
      case 403:
        throw new IronicError('rejected', `${message} (check the Ironic credentials metalflow uses)`, res.statusCode);
      case 503:
        // Ironic's own 503 is its TemporaryFailure (a concurrent action limit, no free conductor worker): refused
        // before anything was done. A 503 that is not Ironic's document is a proxy's: Ironic is not there.
        if (isIronicErrorBody(text)) throw new IronicError('busy', message, 503, undefined, retryAfterMs(res.headers['retry-after']));
        throw new IronicError('unavailable', message, 503);
      default:
        throw new IronicError('unavailable', message, res.statusCode);
    }
  }

  /**
   * A request that never got an HTTP answer. A TLS reason undici names is
   * said at once; a connection closed right after the handshake (what a TLS
   * 1.3 server that refuses the client certificate does) is probed once to
   * find out why.
   */
  private async unreachable(err: unknown, method: string, path: string): Promise<IronicError> {
    if (timedOut(err)) {
      const unknown = method === 'GET' ? '' : '; whether Ironic carried it out is unknown';
      return new IronicError('timed-out', `Ironic ${method} ${path.split('?')[0]}: no answer within ${this.timeout / 1000} s (${err instanceof Error ? err.message : String(err)})${unknown}`, undefined, undefined, undefined, { outcomeUnknown: method !== 'GET' });
    }
    let failure = tlsFailure(err);
    const url = new URL(this.base);
    const code = (err as { code?: unknown }).code;
    if (!failure && url.protocol === 'https:' && (code === 'UND_ERR_SOCKET' || code === 'ECONNRESET')) {
      const host = url.hostname.replace(/^\[|\]$/g, '');
      const hello = Buffer.from(`GET / HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\n\r\n`);
      const probe = await probeTls({ host, port: Number(url.port || 443), hello }, this.tls ?? {}).catch(() => undefined);
      if (probe?.kind === 'tls') failure = probe.failure;
      if (probe?.kind === 'closed') {
        return new IronicError('tls', `TLS with Ironic at ${this.base}: the server closed the connection after the handshake; it most likely wants a client certificate it trusts (IRONIC_CLIENT_CERT_FILE and IRONIC_CLIENT_PRIVATE_KEY_FILE)`);
      }
    }
    // A change whose connection closed under it (not one refused before it went out): Ironic may have taken it.
    if (!failure && method !== 'GET' && droppedConnection(err)) {
      return new IronicError('unavailable', `Ironic ${method} ${path.split('?')[0]}: the connection closed before an answer (${err instanceof Error ? err.message : String(err)}); whether Ironic carried it out is unknown`, undefined, undefined, undefined, { outcomeUnknown: true });
    }
    if (!failure) return new IronicError('unavailable', `cannot reach Ironic at ${this.base}: ${err instanceof Error ? err.message : String(err)}`);
    const hint = failure.notTls
      ? 'the port does not speak TLS: use an http:// IRONIC_URL, or Ironic\'s TLS port'
      : failure.clientCertificateRefused
        ? 'Ironic (or its proxy) wants a client certificate it trusts: IRONIC_CLIENT_CERT_FILE and IRONIC_CLIENT_PRIVATE_KEY_FILE'
        : failure.untrusted
          ? 'its certificate is not signed by a trusted CA: IRONIC_CACERT_FILE names the CA bundle that signed it'
          : 'see the reason';
    return new IronicError('tls', `TLS with Ironic at ${this.base} failed: ${failure.reason} (${failure.code}); ${hint}`);
  }
}
