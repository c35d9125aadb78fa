/**
 * Small helpers for the Redfish tests: a tiny ISO built with genisoimage and
 * served over HTTP on 127.0.0.1 (sushy-tools downloads the image on
 * InsertMedia), and a self-signed certificate for 127.0.0.1 made with openssl.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function tinyIso(): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'metalflow-iso-'));
  try {
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src', 'hello.txt'), 'metalflow live ISO test\n');
    execFileSync('genisoimage', ['-quiet', '-V', 'MFTEST', '-o', join(dir, 'tiny.iso'), join(dir, 'src')], { stdio: 'pipe' });
    return readFileSync(join(dir, 'tiny.iso'));
  } catch (err) {
    throw new Error(`cannot build a test ISO with genisoimage (Debian package genisoimage): ${(err as Error).message}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface FileServer {
  url(name: string): string;
  /** GET requests per path. */
  hits(path: string): number;
  close(): Promise<void>;
}

export async function serveFiles(files: Record<string, Buffer>): Promise<FileServer> {
  const hits = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const body = files[path.slice(1)];
    if (!body) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: (name) => `http://127.0.0.1:${port}/${name}`,
    hits: (path) => hits.get(path) ?? 0,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A self-signed certificate (and key) for 127.0.0.1, valid one day. */
export function selfSignedCert(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'metalflow-tls-'));
  try {
    execFileSync(
      'openssl',
      [
        'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
        '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1',
        '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: 'pipe' },
    );
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
