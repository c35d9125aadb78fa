/**
 * A counting, fault-injecting HTTP proxy in front of the real Ironic: it
 * records every request (to count deploys) and can answer some requests
 * itself (409 "node locked") or hold them, to show behaviour no healthy
 * Ironic would show on demand. Everything else goes to Ironic untouched.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  body: string;
}

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

  constructor(private readonly target: string) {}

  get url(): string {
    const addr = this.server?.address() as AddressInfo;
    return `http://127.0.0.1:${addr.port}`;
  }

  /** Answer the next `times` matching requests with `status` instead of forwarding them. */
  fail(match: Match, times: number, status = 409, faultstring = 'Node is locked by host metalflow-test-proxy, please retry after the current operation is completed.'): void {
    const body = JSON.stringify({ error_message: JSON.stringify({ faultstring, debuginfo: null }) });
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
    const rec: RecordedRequest = { method: req.method ?? 'GET', path: req.url ?? '/', body: body.toString('utf8') };
    this.requests.push(rec);
    const fault = this.faults.find((f) => f.remaining > 0 && f.match(rec));
    if (fault) {
      fault.remaining -= 1;
      res.writeHead(fault.status, { 'content-type': 'application/json' }).end(fault.body);
      return;
    }
    const hold = this.holds.find((h) => h.match(rec));
    if (hold) await new Promise((r) => setTimeout(r, hold.ms));
    const at = this.answered.findIndex((a) => a.match(rec));
    const after = at >= 0 ? this.answered.splice(at, 1)[0] : undefined;
    const target = new URL(rec.path, this.target);
    const upstream = request(
      target,
      { method: rec.method, headers: { ...req.headers, host: target.host } },
      (up) => {
        void (async () => {
          if (after) await after.then();
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        })();
      },
    );
    upstream.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502).end(String(err));
    });
    upstream.end(body);
  }
}

/** A power change: a PUT to the power-state endpoint (any target). */
export const isPowerChange = (r: RecordedRequest): boolean => r.method === 'PUT' && /\/states\/power$/.test(r.path);

/** A deploy is a PUT to the provision-state endpoint with target "active". */
export const isDeploy = (r: RecordedRequest): boolean =>
  r.method === 'PUT' && /\/states\/provision$/.test(r.path) && /"target":\s*"active"/.test(r.body);
