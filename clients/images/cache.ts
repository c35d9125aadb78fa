/**
 * The image cache next to the hosts: each image downloaded once from its
 * origin, verified against its checksum while it streams, and kept under its
 * checksum (content-addressed: `<algorithm>-<hex>`), so two URLs of one image
 * share an entry and a cache URL names no secret of the origin's.
 *
 * - A download is written to `partial/` under a name of its own and renamed
 *   into `images/` only once its hash matched: a worker killed mid-download
 *   leaves a partial file, never a served one (and `open` deletes it).
 * - Concurrent requests for one image share one download (in this process).
 * - A size limit, least-recently-used first out: an entry's last use is its
 *   file's mtime, so the order survives a restart. The entry just added is never
 *   the one evicted; a file being served when evicted is served to the end
 *   (unlinked, still open).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm, stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import type { Dispatcher } from 'undici';
import type { ChecksumAlgorithm } from './checksum-file';
import { ImageError } from './errors';
import { downloadVerified, type ExpectedChecksum } from './verified-download';

export interface ImageCacheOptions {
  dir: string;
  /** Total bytes of cached images; least recently used go first when a new one passes it. */
  maxBytes: number;
  dispatcher: Dispatcher;
  log?: (line: string) => void;
}

export interface CachedImage {
  key: string;
  path: string;
  bytes: number;
  /** This call downloaded it (false: it was cached, or another request's download was shared). */
  downloaded: boolean;
}

const KEY = /^(md5|sha256|sha512)-([0-9a-f]{32}|[0-9a-f]{64}|[0-9a-f]{128})$/;

export const cacheKey = (expected: ExpectedChecksum): string => `${expected.algorithm}-${expected.value.toLowerCase()}`;

/** A cache key as the server receives it, or undefined when it is not one. */
export function parseCacheKey(key: string): ExpectedChecksum | undefined {
  const m = KEY.exec(key);
  return m ? { algorithm: m[1] as ChecksumAlgorithm, value: m[2] ?? '' } : undefined;
}

export class ImageCache {
  private readonly entries = new Map<string, { bytes: number; lastUsed: number }>();
  private readonly inFlight = new Map<string, Promise<{ bytes: number }>>();
  private readonly images: string;
  private readonly partial: string;
  /** Downloads from the origin this process started (the tests and the benchmark count them). */
  downloads = 0;

  constructor(private readonly opts: ImageCacheOptions) {
    this.images = join(opts.dir, 'images');
    this.partial = join(opts.dir, 'partial');
  }

  /** Creates the directories, deletes partial downloads left by a killed worker, and reads what is cached. */
  async open(): Promise<this> {
    await rm(this.partial, { recursive: true, force: true });
    await mkdir(this.partial, { recursive: true });
    await mkdir(this.images, { recursive: true });
    for (const name of await readdir(this.images)) {
      if (!KEY.test(name)) continue;
      const st = await stat(join(this.images, name));
      this.entries.set(name, { bytes: st.size, lastUsed: st.mtimeMs });
      this.clock = Math.max(this.clock, st.mtimeMs);
    }
    return this;
  }

  get totalBytes(): number {
    let total = 0;
    for (const e of this.entries.values()) total += e.bytes;
    return total;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** The file of a cached image, marked as used; undefined when it is not cached (or no key). */
  lookup(key: string): { path: string; bytes: number } | undefined {
    const entry = this.entries.get(key);
    if (!entry || !KEY.test(key)) return undefined;
    this.touch(key);
    return { path: join(this.images, key), bytes: entry.bytes };
  }

  /** The image with this checksum, downloaded from `url` unless cached or already on its way. */
  async ensure(url: string, expected: ExpectedChecksum): Promise<CachedImage> {
    const key = cacheKey(expected);
    const path = join(this.images, key);
    const cached = this.entries.get(key);
    if (cached) {
      this.touch(key);
      return { key, path, bytes: cached.bytes, downloaded: false };
    }
    const running = this.inFlight.get(key);
    if (running) return { key, path, ...(await running), downloaded: false };
    const download = this.download(url, expected, key, path).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, download);
    return { key, path, ...(await download), downloaded: true };
  }

  private async download(url: string, expected: ExpectedChecksum, key: string, path: string): Promise<{ bytes: number }> {
    const partial = join(this.partial, `${key}.${randomBytes(6).toString('hex')}`);
    this.downloads += 1;
    const { bytes } = await downloadVerified(this.opts.dispatcher, url, expected, { dest: partial, maxBytes: this.opts.maxBytes });
    await rename(partial, path);
    this.entries.set(key, { bytes, lastUsed: this.stamp() });
    await this.evict(key);
    return { bytes };
  }

  /** Least recently used entries out until the total fits, `keep` (the one just added) never. */
  private async evict(keep: string): Promise<void> {
    const order = [...this.entries.entries()].filter(([k]) => k !== keep).sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    let total = this.totalBytes;
    for (const [key, entry] of order) {
      if (total <= this.opts.maxBytes) break;
      this.entries.delete(key);
      total -= entry.bytes;
      await rm(join(this.images, key), { force: true });
      this.opts.log?.(`image cache: evicted ${key} (${entry.bytes} bytes, least recently used)`);
    }
  }

  private clock = 0;

  /** Now in ms, but later than every stamp before it: two uses in one millisecond must not tie. */
  private stamp(): number {
    this.clock = Math.max(Date.now(), this.clock + 1);
    return this.clock;
  }

  private touch(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    entry.lastUsed = this.stamp();
    const at = new Date(entry.lastUsed);
    utimes(join(this.images, key), at, at).catch(() => undefined);
  }
}

/** Thrown when the worker has no cache but a host asks for one. */
export const noCache = (): ImageError =>
  new ImageError('cache', 'the host asks for the image cache (cacheImages), but this worker has none: set METALFLOW_IMAGE_CACHE_DIR and METALFLOW_IMAGE_CACHE_URL on the workers');
