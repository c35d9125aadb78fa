/**
 * The image client and activity against real HTTP servers on loopback: a
 * server that ignores Range is cut off after the sniff window, redirects are
 * followed, and each failure has its type (the activity's Temporal failure
 * type and retryability with it).
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { imageDispatcher } from '../../clients/images/http';
import { probeImage } from '../../clients/images/probe';
import { MAX_CHECKSUM_FILE_BYTES, MD5_WARNING, resolveChecksumUrl } from '../../clients/images/checksum-file';
import { ImageError } from '../../clients/images/errors';
import { createImageActivities } from '../../activities/images/activities';
import { imageBytes } from '../support/image-bytes';
import { makePki } from '../support/certs';
import { startImageServer, type ImageServer } from '../support/image-server';

const HUGE = 256 * 1024 * 1024;
let web: ImageServer;
let huge: Server;
let hugeUrl: string;
/** Bytes the Range-ignoring server had written when its client went away. */
let hugeSent: Promise<number>;
const dispatcher = imageDispatcher({ timeoutMs: 10_000 });

beforeAll(async () => {
  web = await startImageServer({
    '/disk.qcow2': { body: imageBytes.qcow2() },
    '/big-sums': { body: Buffer.alloc(MAX_CHECKSUM_FILE_BYTES + 10, 0x61), contentType: 'text/plain' },
    '/login-sums': { body: imageBytes.html(), contentType: 'text/html' },
  });
  let resolveSent: (n: number) => void = () => undefined;
  hugeSent = new Promise((resolve) => (resolveSent = resolve));
  // Ignores Range and streams 256 MiB of a raw disk, honouring backpressure.
  huge = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': HUGE });
    if (req.method === 'HEAD') return void res.end();
    const chunk = imageBytes.raw();
    let sent = 0;
    res.on('close', () => resolveSent(sent));
    const pump = (): void => {
      while (sent < HUGE && !res.destroyed) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  });
  await new Promise<void>((resolve) => huge.listen(0, '127.0.0.1', resolve));
  hugeUrl = `http://127.0.0.1:${(huge.address() as AddressInfo).port}/disk.raw`;
});

afterAll(async () => {
  await web?.close();
  huge?.closeAllConnections();
  huge?.close();
});

/** A URL nothing listens on (a server started and closed again). */
async function deadUrl(): Promise<string> {
  const closed = await startImageServer({});
  await closed.close();
  return closed.url('/disk.qcow2');
}

/** What `p` is rejected with, which must be a `kind`. */
async function rejected<E>(p: Promise<unknown>, kind: abstract new (...args: never[]) => E): Promise<E> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (err instanceof kind) return err;
  throw new Error(`expected a ${kind.name}, got ${String(err)}`);
}
const imageError = (p: Promise<unknown>): Promise<ImageError> => rejected(p, ImageError);

describe('image probe over HTTP', () => {
  it('reads only the sniff window of a server that ignores Range', async () => {
    const probe = await probeImage(dispatcher, { url: hugeUrl, format: 'raw' });
    expect(probe).toEqual({ size: HUGE, contentType: 'application/octet-stream', sniffed: 'unknown', ranged: false });
    // The connection is dropped after 64 KiB: what the server wrote is what the socket buffers took, not the image.
    const sent = await hugeSent;
    console.log(`the Range-ignoring server wrote ${sent} of ${HUGE} bytes before the probe hung up`);
    expect(sent).toBeLessThan(HUGE / 8);
  });

  it('follows a redirect to the image', async () => {
    const target = web.url('/disk.qcow2');
    const server = createServer((_req, res) => res.writeHead(302, { location: target }).end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const probe = await probeImage(dispatcher, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/latest.qcow2`, format: 'qcow2' });
      expect(probe).toMatchObject({ sniffed: 'qcow2', size: 65_536, ranged: true });
      // Endless redirects are an HTTP error (final, not retried), never an image made of a redirect page.
      const looping = createServer((req, res) => res.writeHead(302, { location: req.url === '/loop' ? '/loop' : `${req.url ?? ''}x` }).end('<html>moved</html>'));
      await new Promise<void>((resolve) => looping.listen(0, '127.0.0.1', resolve));
      const base = `http://127.0.0.1:${(looping.address() as AddressInfo).port}`;
      const hops = await imageError(probeImage(dispatcher, { url: `${base}/hop` }));
      const loop = await imageError(probeImage(dispatcher, { url: `${base}/loop` }));
      looping.close();
      expect([hops.type, loop.type]).toEqual(['http-error', 'http-error']);
      expect(hops.message).toMatch(/HTTP 302: more than 5 redirects/);
      expect(loop.message).toMatch(/a redirect loop/);
    } finally {
      server.close();
    }
  });

  it('trusts an https image server whose CA it is given, and only then', async () => {
    const pki = makePki({ 'image-server': 'server' });
    const tls = await startImageServer({ '/disk.qcow2': { body: imageBytes.qcow2() } }, { cert: readFileSync(pki.crt('image-server')), key: readFileSync(pki.key('image-server')) });
    try {
      const untrusted = await imageError(probeImage(dispatcher, { url: tls.url('/disk.qcow2') }));
      expect(untrusted.type).toBe('tls');
      expect(untrusted.message).toMatch(/not signed by a CA the worker trusts \(METALFLOW_IMAGE_CACERT_FILE\)$/);
      const trusting = imageDispatcher({ ca: readFileSync(pki.caFile), timeoutMs: 10_000 });
      expect((await probeImage(trusting, { url: tls.url('/disk.qcow2'), format: 'qcow2' })).sniffed).toBe('qcow2');
    } finally {
      await tls.close();
    }
  });

  it('types what goes wrong: no server, a missing file, an HTML or oversized checksum file', async () => {
    expect((await imageError(probeImage(dispatcher, { url: await deadUrl() }))).type).toBe('unreachable');
    expect((await imageError(probeImage(dispatcher, { url: web.url('/nope.qcow2?sig=secret') }))).message).not.toContain('secret');
    const login = await imageError(resolveChecksumUrl(dispatcher, { url: web.url('/disk.qcow2'), checksum: web.url('/login-sums') }));
    expect(login.type).toBe('html-page');
    const big = await imageError(resolveChecksumUrl(dispatcher, { url: web.url('/disk.qcow2'), checksum: web.url('/big-sums') }));
    expect(big.message).toMatch(/is bigger than 1048576 bytes: not a checksum file/);
  });
});

describe('the checkImage activity', () => {
  const { checkImage } = createImageActivities({ http: { timeoutMs: 10_000 } });
  const failure = (p: Promise<unknown>): Promise<ApplicationFailure> => rejected(p, ApplicationFailure);

  it('passes a good image through and warns about md5', async () => {
    const image = { url: web.url('/disk.qcow2'), checksum: 'c'.repeat(32), format: 'qcow2' as const };
    expect(await checkImage({ image })).toEqual({ image, summary: 'a qcow2 image, 65536 bytes, application/octet-stream', warnings: [MD5_WARNING] });
  });

  it('a missing image is final (ImageUnusable, with its type); an unreachable server is retried (Transient)', async () => {
    const missing = await failure(checkImage({ image: { url: web.url('/gone.qcow2'), checksum: 'c'.repeat(64) } }));
    expect(missing).toMatchObject({ type: 'ImageUnusable', nonRetryable: true, details: [{ type: 'not-found' }] });
    expect(await failure(checkImage({ image: { url: await deadUrl(), checksum: 'c'.repeat(64) } }))).toMatchObject({ type: 'Transient', nonRetryable: false });
  });
});
