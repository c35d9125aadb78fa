/**
 * A counting, fault-injecting HTTP proxy in front of the real Ironic (or any
 * HTTP peer, e.g. a Redfish BMC): it records every request (to count deploys)
 * and can answer some requests itself (409 "node locked") or hold them, to
 * show behaviour no healthy peer would show on demand. An interceptor (the
 * chaos suite's) may answer any request itself or leave it unanswered.
 * Everything else goes to the peer untouched. A peer behind TLS (the
 * kube-apiserver) is reached with the TLS options given, so its clients talk
 * plain HTTP to the proxy and the proxy authenticates for them.
 */
import { createServer, request, type ClientRequest, type IncomingMessage, type Server } from 'node:http';
import { request as tlsRequest, type RequestOptions as TlsRequestOptions } from 'node:https';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  body: string;
  /** The API microversion the caller asked for (X-OpenStack-Ironic-API-Version), if any. */
  microversion?: string;
  /** When it arrived (ms since epoch). */
  at: number;
  /** The peer's answer: its status and when it came (unset while none came, or when an interceptor answered). */
  status?: number;
  answeredAt?: number;
  /** Set when an interceptor handled it: what the caller got instead of the peer's answer. */
  injected?: InjectedFault;
}

/**
 * What an interceptor does with a request: answer it itself (the peer never
 * sees it), or leave the caller without an answer for `ms` and then drop the
 * connection, either before the peer saw the request or after the peer acted
 * on it (the answer is lost: the crash window without a crash).
 */
export type Intercept =
  | { kind: 'answer'; status: number; faultstring: string }
  /**
   * `forwardWhen`: the request reaches the peer only once it resolves (still with its answer dropped): a request
   * a saturated peer takes off its queue after the caller gave up on it and read the resource again.
   */
  | { kind: 'no-answer'; ms: number; forward: boolean; forwardWhen?: Promise<unknown> };

export type InjectedFault = `status ${number}` | 'no answer, not forwarded' | 'no answer, forwarded';

/** Did the peer see this request? (Answered by the peer, or forwarded and its answer dropped.) */
export const reachedPeer = (r: RecordedRequest): boolean => r.injected === undefined || r.injected === 'no answer, forwarded';

type Match = (r: RecordedRequest) => boolean;

interface Fault {
  match: Match;
  remaining: number;
  status: number;
  body: string;
}

export class IronicProxy {
  readonly requests: RecordedRequest[] = [];
  private faults: Fault[] = [];
  private holds: { match: Match; ms: number }[] = [];
  private answered: { match: Match; then: () => Promise<void> | void }[] = [];
  private server?: Server;
  /** Consulted for every request no fail() fault took; undefined lets it through. */
  interceptor?: (r: RecordedRequest) => Intercept | undefined;

  constructor(
    private readonly target: string,
    /** For an https target: its CA and the client certificate to present. */
    private readonly tls?: Pick<TlsRequestOptions, 'ca' | 'cert' | 'key'>,
  ) {}

  get url(): string {
    const addr = this.server?.address() as AddressInfo;
    return `http://127.0.0.1:${addr.port}`;
  }

  /** Answer the next `times` matching requests with `status` instead of forwarding them. */
  fail(match: Match, times: number, status = 409, faultstring = 'Node is locked by host metalflow-test-proxy, please retry after the current operation is completed.'): void {
    this.faults.push({ match, remaining: times, status, body: ironicErrorBody(faultstring) });
  }

  /** Answer the next `times` matching requests with `status` and `body` as given (e.g. a success that is not JSON). */
  answerRaw(match: Match, times: number, status: number, body: string): void {
    this.faults.push({ match, remaining: times, status, body });
  }

  /** Forward matching requests only after `ms`, so a test can act while one is in flight. */
  hold(match: Match, ms: number): void {
    this.holds.push({ match, ms });
  }

  /**
   * Once: forward the next matching request and, when Ironic has answered it, run `then`
   * before the answer is passed on. Killing the caller there leaves a request that reached
   * Ironic and an answer that never reached the caller: the crash window itself.
   */
  onceAnswered(match: Match, then: () => Promise<void> | void): void {
    this.answered.push({ match, then });
  }

  count(match: Match): number {
    return this.requests.filter(match).length;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(req: IncomingMessage, res: import('node:http').ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const version = req.headers['x-openstack-ironic-api-version'];
    const rec: RecordedRequest = { method: req.method ?? 'GET', path: req.url ?? '/', body: body.toString('utf8'), at: Date.now(), ...(typeof version === 'string' ? { microversion: version } : {}) };
    this.requests.push(rec);
    const fault = this.faults.find((f) => f.remaining > 0 && f.match(rec));
    if (fault) {
      fault.remaining -= 1;
      res.writeHead(fault.status, { 'content-type': 'application/json' }).end(fault.body);
      return;
    }
    const intercept = this.interceptor?.(rec);
    if (intercept?.kind === 'answer') {
      rec.injected = `status ${intercept.status}`;
      res.writeHead(intercept.status, { 'content-type': 'application/json' }).end(ironicErrorBody(intercept.faultstring));
      return;
    }
    if (intercept?.kind === 'no-answer') {
      rec.injected = intercept.forward ? 'no answer, forwarded' : 'no answer, not forwarded';
      if (intercept.forward && intercept.forwardWhen) void intercept.forwardWhen.then(() => this.forwardAndDrop(rec, req, body));
      else if (intercept.forward) this.forwardAndDrop(rec, req, body);
      setTimeout(() => res.destroy(), intercept.ms).unref();
      return;
    }
    const hold = this.holds.find((h) => h.match(rec));
    if (hold) await new Promise((r) => setTimeout(r, hold.ms));
    const at = this.answered.findIndex((a) => a.match(rec));
    const after = at >= 0 ? this.answered.splice(at, 1)[0] : undefined;
    const upstream = this.forward(rec, req, body, (up) => {
      rec.status = up.statusCode;
      rec.answeredAt = Date.now();
      void (async () => {
        if (after) await after.then();
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      })();
    });
    upstream.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502).end(String(err));
    });
  }

  /** The peer gets the request and acts on it; its answer goes nowhere. */
  private forwardAndDrop(rec: RecordedRequest, req: IncomingMessage, body: Buffer): void {
    this.forward(rec, req, body, (up) => up.resume()).on('error', () => undefined);
  }

  private forward(rec: RecordedRequest, req: IncomingMessage, body: Buffer, onAnswer: (up: IncomingMessage) => void): ClientRequest {
    const target = new URL(rec.path, this.target);
    const options = { method: rec.method, headers: { ...req.headers, host: target.host } };
    const tls = { ca: this.tls?.ca, cert: this.tls?.cert, key: this.tls?.key };
    const upstream = target.protocol === 'https:' ? tlsRequest(target, { ...options, ...tls }, onAnswer) : request(target, options, onAnswer);
    upstream.end(body);
    return upstream;
  }
}

function ironicErrorBody(faultstring: string): string {
  return JSON.stringify({ error_message: JSON.stringify({ faultstring, debuginfo: null }) });
}

/** A power change: a PUT to the power-state endpoint (any target). */
export const isPowerChange = (r: RecordedRequest): boolean => r.method === 'PUT' && /\/states\/power$/.test(r.path);

/** A deploy is a PUT to the provision-state endpoint with target "active". */
export const isDeploy = (r: RecordedRequest): boolean =>
  r.method === 'PUT' && /\/states\/provision$/.test(r.path) && /"target":\s*"active"/.test(r.body);
