/**
 * The HTTP side of the image cache: what Ironic's agent and the BMCs download.
 * `GET|HEAD /images/<algorithm>-<hex>/<file name>` serves a cached, verified
 * image (the file name is the origin's, for whoever looks at the extension);
 * anything else, or an image not (or no longer) cached, is a 404. Only files
 * already renamed into the cache are ever served, never a partial download.
 * Extra routes (the config drives) are given by the caller.
 */
import { createReadStream } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ImageCache } from './cache';

/** A route of its own: answers the request and returns true, or returns false to let the next one try. */
export type CacheRoute = (req: IncomingMessage, res: ServerResponse, path: string) => boolean;

export interface CacheServer {
  /** `http://host:port` as bound (tests listen on port 0). */
  readonly boundUrl: string;
  close(): Promise<void>;
}

const IMAGE_PATH = /^\/images\/([a-z0-9]+-[0-9a-f]+)\/[^/]+$/;

/** The path of an image in the cache, as the server serves it. */
export const cachedImagePath = (key: string, fileName: string): string => `/images/${key}/${encodeURIComponent(fileName || 'image')}`;

function serveImage(cache: ImageCache, req: IncomingMessage, res: ServerResponse, path: string): boolean {
  const m = IMAGE_PATH.exec(path);
  if (!m) return false;
  const file = cache.lookup(m[1] ?? '');
  if (!file) {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not in the image cache\n');
    return true;
  }
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': file.bytes });
  if (req.method === 'HEAD') {
    res.end();
    return true;
  }
  const stream = createReadStream(file.path);
  stream.on('error', () => res.destroy());
  stream.pipe(res);
  return true;
}

export async function startCacheServer(cache: ImageCache, listen: { host: string; port: number }, routes: CacheRoute[] = []): Promise<CacheServer> {
  const server: Server = createServer((req, res) => {
    let path: string;
    try {
      path = decodeURI((req.url ?? '/').split('?')[0] ?? '/');
    } catch {
      // A malformed escape: thrown here, it would end the worker.
      res.writeHead(400, { 'content-type': 'text/plain' }).end('malformed URL\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    for (const route of [...routes, (q: IncomingMessage, s: ServerResponse, p: string) => serveImage(cache, q, s, p)]) {
      if (route(req, res, path)) return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    boundUrl: `http://${address.includes(':') ? `[${address}]` : address}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
