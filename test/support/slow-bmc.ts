/**
 * A slow BMC: an HTTP proxy in front of a Redfish emulator (sushy-tools) that
 * serves one request at a time, as many real BMCs do, each only after
 * `delayMs`. A whole Redfish session (service root, system, power, inventory)
 * then takes far longer than any single request, as on a slow real BMC. It
 * can also answer chosen requests with an HTTP error of its own (after the
 * same delay), the way a BMC refuses a resource. A fake only where the real
 * emulator cannot be made slow; everything else is sushy-tools' answer.
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

interface Refusal {
  match: (path: string) => boolean;
  status: number;
  message: string;
}

export class SlowBmc {
  readonly requests: { method: string; path: string }[] = [];
  private refusals: Refusal[] = [];
  private queue: Promise<void> = Promise.resolve();
  private server?: Server;

  constructor(
    private readonly target: string,
    private readonly delayMs: number,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${(this.server?.address() as AddressInfo).port}`;
  }

  /** Answer every request whose path matches with `status` and a Redfish error body naming `message`. */
  refuse(match: (path: string) => boolean, status: number, message: string): void {
    this.refusals.push({ match, status, message });
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      // One at a time, in arrival order.
      this.queue = this.queue.then(() => this.serve(req, res)).catch(() => undefined);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const path = req.url ?? '/';
    this.requests.push({ method: req.method ?? 'GET', path });
    await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    const refusal = this.refusals.find((r) => r.match(path));
    if (refusal) {
      const body = JSON.stringify({ error: { code: 'Base.1.0.InsufficientPrivilege', message: refusal.message } });
      res.writeHead(refusal.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    const target = new URL(this.target);
    await new Promise<void>((resolve) => {
      const upstream = request(
        { host: target.hostname, port: target.port, method: req.method, path, headers: { ...req.headers, host: target.host } },
        (answer) => {
          const parts: Buffer[] = [];
          answer.on('data', (d: Buffer) => parts.push(d));
          answer.on('end', () => {
            const body = Buffer.concat(parts);
            const headers = { ...answer.headers, 'content-length': String(body.length) };
            delete headers['transfer-encoding'];
            res.writeHead(answer.statusCode ?? 502, headers);
            res.end(body);
            resolve();
          });
        },
      );
      upstream.on('error', (err) => {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(String(err));
        resolve();
      });
      upstream.end(Buffer.concat(chunks));
    });
  }
}
