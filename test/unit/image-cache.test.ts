/**
 * The image cache against real HTTP servers on loopback (an origin that counts
 * its requests, one that stalls mid-image) and its own HTTP server: one
 * download per image however many ask at once, the checksum verified while
 * streaming (sha256, sha512, md5), a mismatch deleted and typed, LRU eviction
 * by size, and a partial download never served (nor kept by a restarted worker).
 */
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { ImageCache, cacheKey } from '../../clients/images/cache';
import { ImageError } from '../../clients/images/errors';
import { imageDispatcher } from '../../clients/images/http';
import { downloadVerified } from '../../clients/images/verified-download';
import { createImageCacheActivities } from '../../activities/images/cache';
import { startImageServer, type ImageServer } from '../support/image-server';
import { startTestImageCache, type TestImageCache } from '../support/image-cache';

const MiB = 1024 * 1024;
const disk = randomBytes(3 * MiB);
const other = randomBytes(MiB);
const third = randomBytes(MiB);
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const dispatcher = imageDispatcher({ timeoutMs: 10_000 });

let origin: ImageServer;
/** Sends the first half of `disk`, then nothing until the test lets go. */
let stalled: Server;
let stalledUrl: string;
const held: ServerResponse[] = [];

beforeAll(async () => {
  origin = await startImageServer({
    '/os/disk.qcow2': { body: disk },
    '/os/other.raw': { body: other },
    '/os/third.raw': { body: third },
    '/os/SHA256SUMS': { body: `${sha256(other)}  other.raw\n` },
  });
  stalled = createServer((_req, res) => {
    res.writeHead(200, { 'content-length': disk.length });
    res.write(disk.subarray(0, disk.length / 2));
    held.push(res);
  });
  await new Promise<void>((resolve) => stalled.listen(0, '127.0.0.1', resolve));
  stalledUrl = `http://127.0.0.1:${(stalled.address() as AddressInfo).port}/os/disk.qcow2`;
});

afterAll(async () => {
  for (const res of held) res.destroy();
  stalled.closeAllConnections();
  await new Promise<void>((resolve) => stalled.close(() => resolve()));
  await origin.close();
});

const gets = (path: string) => origin.seen.filter((s) => s === `GET ${path}`).length;

async function withCache<T>(opts: Parameters<typeof startTestImageCache>[0], run: (c: TestImageCache) => Promise<T>): Promise<T> {
  const c = await startTestImageCache(opts);
  try {
    return await run(c);
  } finally {
    await c.close();
  }
}

describe('image cache', () => {
  it('downloads an image once for many concurrent requests and serves the verified bytes', async () => {
    await withCache({}, async ({ cache, server }) => {
      const before = gets('/os/disk.qcow2');
      const expected = { algorithm: 'sha256' as const, value: sha256(disk) };
      const all = await Promise.all(Array.from({ length: 10 }, () => cache.ensure(origin.url('/os/disk.qcow2'), expected)));
      expect(gets('/os/disk.qcow2') - before).toBe(1);
      expect(all.filter((r) => r.downloaded)).toHaveLength(1);
      expect(new Set(all.map((r) => r.key))).toEqual(new Set([cacheKey(expected)]));
      // Asked again later: from the cache, no new download.
      await cache.ensure(origin.url('/os/disk.qcow2'), expected);
      expect(gets('/os/disk.qcow2') - before).toBe(1);
      const served = await fetch(`${server.boundUrl}/images/${cacheKey(expected)}/disk.qcow2`);
      expect(served.status).toBe(200);
      expect(Buffer.from(await served.arrayBuffer()).equals(disk)).toBe(true);
      expect((await fetch(`${server.boundUrl}/images/${cacheKey({ algorithm: 'sha256', value: sha256(other) })}/x`)).status).toBe(404);
      // A malformed escape is the client's error, not the server's end.
      expect((await fetch(`${server.boundUrl}/images/%E0%A4%A/x`)).status).toBe(400);
      expect((await fetch(`${server.boundUrl}/images/${cacheKey(expected)}/disk.qcow2`)).status).toBe(200);
    });
  });

  it('verifies sha512 and md5 as well as sha256', async () => {
    await withCache({}, async ({ cache }) => {
      for (const algorithm of ['sha512', 'md5'] as const) {
        const value = createHash(algorithm).update(other).digest('hex');
        const got = await cache.ensure(origin.url('/os/other.raw'), { algorithm, value });
        expect(got.bytes).toBe(other.length);
      }
    });
  });

  it('deletes a download whose hash does not match and says which hash it expected and got', async () => {
    await withCache({}, async ({ cache, server, dir }) => {
      const wrong = 'ab'.repeat(32);
      const err = await cache.ensure(origin.url('/os/disk.qcow2'), { algorithm: 'sha256', value: wrong }).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(ImageError);
      expect((err as ImageError).type).toBe('checksum-mismatch');
      expect((err as ImageError).message).toContain(`expected ${wrong}, got ${sha256(disk)}`);
      expect(readdirSync(join(dir, 'partial'))).toEqual([]);
      expect(readdirSync(join(dir, 'images'))).toEqual([]);
      expect((await fetch(`${server.boundUrl}/images/sha256-${wrong}/disk.qcow2`)).status).toBe(404);
    });
  });

  it('evicts the least recently used image when a new one passes the size limit', async () => {
    // Room for two 1 MiB images, not three.
    await withCache({ maxBytes: 2 * MiB + 10 }, async ({ cache }) => {
      const key = (b: Buffer) => ({ algorithm: 'sha256' as const, value: sha256(b) });
      await cache.ensure(origin.url('/os/other.raw'), key(other));
      await cache.ensure(origin.url('/os/third.raw'), key(third));
      // other is used again, so third is now the least recently used.
      await cache.ensure(origin.url('/os/other.raw'), key(other));
      const small = randomBytes(1024);
      const smallOrigin = await startImageServer({ '/small.raw': { body: small } });
      try {
        await cache.ensure(smallOrigin.url('/small.raw'), key(small));
      } finally {
        await smallOrigin.close();
      }
      expect(cache.has(cacheKey(key(third)))).toBe(false);
      expect(cache.has(cacheKey(key(other)))).toBe(true);
      expect(cache.has(cacheKey(key(small)))).toBe(true);
      expect(cache.totalBytes).toBeLessThanOrEqual(2 * MiB + 10);
    });
  });

  it('refuses an image bigger than the cache before downloading it', async () => {
    await withCache({ maxBytes: MiB }, async ({ cache, dir }) => {
      const err = await cache.ensure(origin.url('/os/disk.qcow2'), { algorithm: 'sha256', value: sha256(disk) }).then(() => undefined, (e: unknown) => e);
      expect((err as ImageError).type).toBe('cache');
      expect(readdirSync(join(dir, 'partial'))).toEqual([]);
    });
  });

  it('never serves a partial download, and a restarted worker deletes it', async () => {
    await withCache({}, async ({ cache, server, dir }) => {
      const expected = { algorithm: 'sha256' as const, value: sha256(disk) };
      const pending = cache.ensure(stalledUrl, expected).then(() => 'done', (e: unknown) => e);
      // Half the image is on disk, under partial/.
      for (;;) {
        const names = readdirSync(join(dir, 'partial'));
        if (names.length === 1) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect((await fetch(`${server.boundUrl}/images/${cacheKey(expected)}/disk.qcow2`)).status).toBe(404);
      // The worker dies here; a new one opens the same directory.
      const restarted = await new ImageCache({ dir, maxBytes: 2 ** 30, dispatcher }).open();
      expect(readdirSync(join(dir, 'partial'))).toEqual([]);
      expect(restarted.has(cacheKey(expected))).toBe(false);
      // The retried download (from a sane origin) fills it.
      await restarted.ensure(origin.url('/os/disk.qcow2'), expected);
      expect(restarted.has(cacheKey(expected))).toBe(true);
      for (const res of held) res.destroy();
      expect(await pending).toBeInstanceOf(ImageError);
    });
  });
});

describe('the cacheImage and verifyImage activities', () => {
  it('resolves a checksum file, caches the image and points the deploy at the cache', async () => {
    await withCache({}, async ({ served }) => {
      const { cacheImage } = createImageCacheActivities({ cache: served });
      const image = { url: `${origin.url('/os/other.raw')}?X-Signature=s3cr3t`, checksum: origin.url('/os/SHA256SUMS'), format: 'raw' as const };
      const put = await cacheImage({ image });
      expect(put.warning).toBeUndefined();
      expect(put.image).toEqual({ ...image, url: `${served.baseUrl}/images/sha256-${sha256(other)}/other.raw`, checksum: sha256(other), checksumType: 'sha256' });
      const served200 = await fetch(put.image.url);
      expect(Buffer.from(await served200.arrayBuffer()).equals(other)).toBe(true);
    });
  });

  it('fails a mismatch as a non-retryable ImageUnusable of type checksum-mismatch; no cache on the worker is one too', async () => {
    await withCache({}, async ({ served }) => {
      const { cacheImage } = createImageCacheActivities({ cache: served });
      const err = await cacheImage({ image: { url: origin.url('/os/other.raw'), checksum: 'cd'.repeat(32), format: 'raw' } }).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(ApplicationFailure);
      expect((err as ApplicationFailure).type).toBe('ImageUnusable');
      expect((err as ApplicationFailure).nonRetryable).toBe(true);
      expect((err as ApplicationFailure).details).toEqual([{ type: 'checksum-mismatch' }]);
    });
    const { cacheImage } = createImageCacheActivities({});
    const err = await cacheImage({ image: { url: origin.url('/os/other.raw'), checksum: sha256(other), format: 'raw' } }).then(() => undefined, (e: unknown) => e);
    expect((err as ApplicationFailure).details).toEqual([{ type: 'cache' }]);
    expect((err as ApplicationFailure).message).toMatch(/METALFLOW_IMAGE_CACHE_DIR/);
  });

  it('verifies a whole image without keeping it', async () => {
    const { verifyImage } = createImageCacheActivities({});
    expect(await verifyImage({ image: { url: origin.url('/os/disk.qcow2'), checksum: sha256(disk), format: 'qcow2' } })).toEqual({ bytes: disk.length });
    const err = await downloadVerified(dispatcher, origin.url('/os/disk.qcow2'), { algorithm: 'sha256', value: sha256(other) }).then(() => undefined, (e: unknown) => e);
    expect((err as ImageError).type).toBe('checksum-mismatch');
  });
});
