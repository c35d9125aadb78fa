/**
 * The image cache's activities (clients/images/cache.ts): `cacheImage` puts a
 * host's image in the worker's cache (downloaded once, verified while it
 * streams) and hands back the image to deploy from there; `verifyImage` reads
 * a whole image and checks its hash without keeping it (the direct
 * provisioner's BMC verifies nothing). Both are safe to retry: a cached image
 * is not downloaded again, a partial download is never served, and they
 * heartbeat while they read.
 */
import type { Dispatcher } from 'undici';
import type { Image } from '../../model/host';
import { isOciUrl } from '../../model/image';
import { imageFileName, resolveChecksumUrl, type ChecksumAlgorithm } from '../../clients/images/checksum-file';
import { noCache, type ImageCache } from '../../clients/images/cache';
import { cachedImagePath } from '../../clients/images/cache-server';
import { imageDispatcher, type ImageHttpOptions } from '../../clients/images/http';
import { downloadVerified, type ExpectedChecksum } from '../../clients/images/verified-download';
import { imageFailure, isUrl } from './activities';
import { keepAlive } from '../common/activity-context';

/** The worker's cache and the base URL Ironic and the BMCs reach it at (METALFLOW_IMAGE_CACHE_URL). */
export interface ServedImageCache {
  cache: ImageCache;
  baseUrl: string;
}

export interface CachedImageResult {
  /** The image to deploy: the cache's URL and the resolved checksum; the image as given when it cannot be cached. */
  image: Image;
  /** Why the image was not cached (the host's Warning Event says it). */
  warning?: string;
}

const LENGTH_ALGORITHM: Record<number, ChecksumAlgorithm> = { 32: 'md5', 64: 'sha256', 128: 'sha512' };

/** The hash the whole image must have: inline, or read from the checksum file; undefined when none is given. */
async function expectedChecksum(dispatcher: Dispatcher, image: Image): Promise<ExpectedChecksum | undefined> {
  const checksum = image.checksum ?? '';
  if (checksum === '') return undefined;
  if (isUrl(checksum)) return resolveChecksumUrl(dispatcher, image);
  const declared = image.checksumType ?? 'auto';
  const algorithm = declared === 'auto' ? LENGTH_ALGORITHM[checksum.length] : declared;
  // The validator refuses such a spec; a checksum that fits no algorithm cannot be verified.
  return algorithm ? { algorithm, value: checksum.toLowerCase() } : undefined;
}

export function createImageCacheActivities(deps: { cache?: ServedImageCache; http?: ImageHttpOptions } = {}) {
  const dispatcher = imageDispatcher(deps.http);
  return {
    async cacheImage({ image }: { image: Image }): Promise<CachedImageResult> {
      if (isOciUrl(image.url)) return { image, warning: 'an OCI image is pulled by Ironic from its registry, not through the image cache' };
      const stop = keepAlive(5_000);
      try {
        const served = deps.cache;
        if (!served) throw noCache();
        const expected = await expectedChecksum(dispatcher, image);
        if (!expected) return { image, warning: 'the image has no checksum to verify it against, so it is not cached: the deploy downloads it from its origin' };
        const { key } = await served.cache.ensure(image.url, expected);
        const url = `${served.baseUrl.replace(/\/+$/, '')}${cachedImagePath(key, imageFileName(image.url))}`;
        return { image: { ...image, url, checksum: expected.value, checksumType: expected.algorithm } };
      } catch (err) {
        throw imageFailure(err);
      } finally {
        stop();
      }
    },

    async verifyImage({ image }: { image: Image }): Promise<{ bytes: number } | undefined> {
      const stop = keepAlive(5_000);
      try {
        const expected = await expectedChecksum(dispatcher, image);
        if (!expected) return undefined;
        return await downloadVerified(dispatcher, image.url, expected);
      } catch (err) {
        throw imageFailure(err);
      } finally {
        stop();
      }
    },
  };
}

export type ImageCacheActivities = ReturnType<typeof createImageCacheActivities>;
