/**
 * The few Kubernetes API calls the shim makes, authenticated and trusted the
 * way the kubeconfig says (through @kubernetes/client-node's KubeConfig), with
 * every request counted so tests can check the controller does not list per event.
 */
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { Agent, request, type Dispatcher } from 'undici';
import { KubeError } from './kube-error';

export interface KubeRequest {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** e.g. application/merge-patch+json for merge patches. */
  contentType?: string;
  /** Accept header; PARTIAL_METADATA asks for metadata only. */
  accept?: string;
  /** Ends the request early (a lease renewal that must not outlive its deadline). */
  signal?: AbortSignal;
}

/**
 * Ask the API server for metadata only (names, resourceVersions): used to
 * watch Secrets without reading their data. A list answers with a
 * PartialObjectMetadataList, a watch with PartialObjectMetadata events.
 */
export const PARTIAL_METADATA = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';
export const PARTIAL_METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

/**
 * A bearer token kept in a file that something else rotates (a projected
 * service-account token is replaced hourly): re-read when older than
 * `refreshMs`, as client-go does, and at once after the server answers 401.
 */
class TokenFileSource {
  private token = '';
  private readAt = Number.NEGATIVE_INFINITY;

  constructor(
    readonly path: string,
    private readonly refreshMs: number,
    private readonly now: () => number,
  ) {}

  current(): string {
    if (this.now() - this.readAt >= this.refreshMs) {
      this.token = readFileSync(this.path, 'utf8').trim();
      this.readAt = this.now();
    }
    return this.token;
  }

  expire(): void {
    this.readAt = Number.NEGATIVE_INFINITY;
  }
}

export interface KubeRestOptions {
  /** How long a token read from a token file is used before the file is read again; 60 s like client-go. */
  tokenRefreshMs?: number;
  /** The clock, for tests. */
  now?: () => number;
  /** Connections kept to the API server; requests beyond them wait for one. 16 unless set. */
  connections?: number;
}

export class KubeRest {
  /** Requests made, by verb and path without query: tests read this. */
  readonly counts = new Map<string, number>();
  readonly watch: Watch;
  /** A watch that sends `Accept: PARTIAL_METADATA`: events carry metadata only. */
  readonly metadataWatch: Watch;

  private constructor(
    readonly kc: KubeConfig,
    private readonly server: string,
    private readonly headers: Record<string, string>,
    private readonly dispatcher: Dispatcher,
    private readonly tokenFile?: TokenFileSource,
  ) {
    this.watch = new Watch(kc);
    // Watch builds its request from the KubeConfig alone; a config that adds the header is the one seam it offers.
    const withAccept = Object.create(kc, {
      applyToFetchOptions: {
        value: async (opts: Parameters<KubeConfig['applyToFetchOptions']>[0]) => {
          const init = await kc.applyToFetchOptions(opts);
          (init.headers as unknown as Headers).set('Accept', PARTIAL_METADATA);
          return init;
        },
      },
    }) as KubeConfig;
    this.metadataWatch = new Watch(withAccept);
  }

  static async create(kc: KubeConfig, options: KubeRestOptions = {}): Promise<KubeRest> {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    const opts: { ca?: Buffer | string; cert?: Buffer | string; key?: Buffer | string; headers?: Record<string, string>; rejectUnauthorized?: boolean } = {};
    await kc.applyToHTTPSOptions(opts as never);
    const dispatcher = new Agent({
      connect: { ca: opts.ca, cert: opts.cert, key: opts.key, rejectUnauthorized: !cluster.skipTLSVerify },
      connections: options.connections ?? 16,
    });
    const user = kc.getCurrentUser() as ({ tokenFile?: string; authProvider?: { config?: Record<string, string> } } | null);
    const path = user?.authProvider?.config?.tokenFile ?? user?.tokenFile;
    const tokenFile = path ? new TokenFileSource(path, options.tokenRefreshMs ?? 60_000, options.now ?? Date.now) : undefined;
    const headers = { ...(opts.headers ?? {}) };
    // Taken per request from the file instead, so a rotated token is used.
    if (tokenFile) delete headers.Authorization;
    return new KubeRest(kc, cluster.server.replace(/\/+$/, ''), headers, dispatcher, tokenFile);
  }

  count(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  async call<T>(method: Dispatcher.HttpMethod, path: string, req: KubeRequest = {}): Promise<T> {
    const key = `${method} ${path}`;
    this.counts.set(key, this.count(key) + 1);
    const qs = Object.entries(req.query ?? {})
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
      .join('&');
    const headers: Record<string, string> = { ...this.headers, accept: req.accept ?? 'application/json' };
    if (this.tokenFile) headers.authorization = `Bearer ${this.tokenFile.current()}`;
    if (req.body !== undefined) headers['content-type'] = req.contentType ?? 'application/json';
    const res = await request(`${this.server}${path}${qs ? `?${qs}` : ''}`, {
      method,
      headers,
      body: req.body === undefined ? undefined : JSON.stringify(req.body),
      dispatcher: this.dispatcher,
      ...(req.signal ? { signal: req.signal } : {}),
      headersTimeout: 30_000,
      bodyTimeout: 60_000,
    });
    const text = await res.body.text();
    if (res.statusCode >= 300) {
      let message = text;
      let reason: string | undefined;
      try {
        const status = JSON.parse(text) as { message?: string; reason?: string };
        message = status.message ?? text;
        reason = status.reason;
      } catch {
        // not a Status object
      }
      if (res.statusCode === 401 && this.tokenFile) {
        // The next call reads the file again: the rotation may have landed since.
        this.tokenFile.expire();
        message = `${message} (the token from ${this.tokenFile.path} was refused: expired or not valid for this API server)`;
      }
      throw new KubeError(res.statusCode, `${method} ${path}: ${res.statusCode} ${message}`, reason);
    }
    return (text ? JSON.parse(text) : undefined) as T;
  }
}
