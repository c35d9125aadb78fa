/**
 * A real HTTP (or HTTPS) server on loopback serving image files from memory
 * for the image probe tests: Range requests answered with 206, HEAD refusal
 * on demand, a download that stops half-way on demand, and every request
 * counted per path.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

export interface ServedFile {
  body: Buffer | string;
  status?: number;
  contentType?: string;
  /** Answer HEAD with 405 (servers and object stores that refuse it). */
  refuseHead?: boolean;
  /**
   * The first `downloads` whole-file GETs (no Range) get the headers and the
   * first `afterBytes` bytes, then nothing more for as long as the client
   * stays: a download in progress, for a test to act during it. Later ones
   * get the whole file.
   */
  stall?: { afterBytes: number; downloads: number };
}

export interface ImageServer {
  url(path: string): string;
  /** Requests seen per path, as `METHOD path`. */
  readonly seen: string[];
  close(): Promise<void>;
}

function answer(files: Map<string, ServedFile>, seen: string[], stalled: Map<string, number>, req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  seen.push(`${req.method} ${path}`);
  const file = files.get(path);
  if (!file) {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    return;
  }
  if (req.method === 'HEAD' && file.refuseHead) {
    res.writeHead(405).end();
    return;
  }
  const body = Buffer.isBuffer(file.body) ? file.body : Buffer.from(file.body);
  const headers = { 'content-type': file.contentType ?? 'application/octet-stream', 'accept-ranges': 'bytes' };
  const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
  if (range && (file.status ?? 200) === 200) {
    const start = Number(range[1]);
    const end = Math.min(range[2] ? Number(range[2]) : body.length - 1, body.length - 1);
    res.writeHead(206, { ...headers, 'content-range': `bytes ${start}-${end}/${body.length}`, 'content-length': end - start + 1 });
    res.end(body.subarray(start, end + 1));
    return;
  }
  if (req.method === 'GET' && file.stall && (stalled.get(path) ?? 0) < file.stall.downloads) {
    stalled.set(path, (stalled.get(path) ?? 0) + 1);
    res.writeHead(200, { ...headers, 'content-length': body.length });
    // The rest never comes: the response ends when the client goes away (or the server closes).
    res.write(body.subarray(0, file.stall.afterBytes));
    return;
  }
  res.writeHead(file.status ?? 200, { ...headers, 'content-length': body.length }).end(body);
}

/** Serves `files` (path → file) on 127.0.0.1; with `tls`, over HTTPS with that certificate. */
export async function startImageServer(files: Record<string, ServedFile>, tls?: { cert: Buffer; key: Buffer }): Promise<ImageServer> {
  const table = new Map(Object.entries(files));
  const seen: string[] = [];
  const stalled = new Map<string, number>();
  const handler = (req: IncomingMessage, res: ServerResponse) => answer(table, seen, stalled, req, res);
  const server: Server = tls ? createHttpsServer(tls, handler) : createHttpServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `${tls ? 'https' : 'http'}://127.0.0.1:${port}${path}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
