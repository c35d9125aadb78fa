/**
 * A whole image, downloaded and hashed in one pass: each chunk goes to the
 * hash and (when a destination is given) to a file, so nothing is held in
 * memory and the image is read once. The file is written under a name of its
 * own; only a download whose hash matches is kept, and the caller renames it
 * into place (a partial or corrupt file is deleted, never served).
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Dispatcher } from 'undici';
import type { ChecksumAlgorithm } from './checksum-file';
import { ImageError, networkError, where } from './errors';
import { imageHttpOptionsOf } from './http';
import { getImageStream } from './node-get';

export interface ExpectedChecksum {
  algorithm: ChecksumAlgorithm;
  /** Lower-case hex. */
  value: string;
}

export interface VerifiedDownload {
  bytes: number;
}

export interface DownloadOptions {
  /** Where the bytes go (created; deleted again unless the hash matches). Unset: hashed and dropped. */
  dest?: string;
  /** Refused when the server announces more, cut off when it sends more. */
  maxBytes?: number;
  /** Called with the bytes read so far, at most once per chunk (the activity heartbeats). */
  onProgress?: (bytes: number) => void;
  signal?: AbortSignal;
}

const tooBig = (url: string, max: number): ImageError =>
  new ImageError('cache', `the image at ${where(url)} is bigger than the image cache (${max} bytes, METALFLOW_IMAGE_CACHE_MAX_BYTES)`);

/**
 * Downloads `url` and checks that its hash is `expected`. A mismatch deletes
 * the file and throws `checksum-mismatch` naming both hashes (the hashes are
 * not secrets; the URL's query string is never quoted).
 */
export async function downloadVerified(dispatcher: Dispatcher, url: string, expected: ExpectedChecksum, opts: DownloadOptions = {}): Promise<VerifiedDownload> {
  // Node's client, not undici's: see node-get.ts (undici 7 crashes the process on a server's close mid-backpressure).
  const res = await getImageStream('image', url, imageHttpOptionsOf(dispatcher), opts.signal);
  const announced = Number(res.headers['content-length']);
  if (opts.maxBytes !== undefined && Number.isFinite(announced) && announced > opts.maxBytes) {
    res.destroy();
    throw tooBig(url, opts.maxBytes);
  }
  const hash = createHash(expected.algorithm);
  let bytes = 0;
  const file = opts.dest === undefined ? undefined : createWriteStream(opts.dest, { flags: 'wx' });
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      if (opts.maxBytes !== undefined && bytes > opts.maxBytes) return done(tooBig(url, opts.maxBytes));
      hash.update(chunk);
      opts.onProgress?.(bytes);
      if (!file) return done();
      // The file's own buffer bounds memory: wait for it to drain before taking the next chunk.
      if (file.write(chunk)) return done();
      file.once('drain', () => done());
    },
    final(done) {
      if (!file) return done();
      file.end((err?: Error | null) => done(err));
    },
  });
  try {
    await pipeline(res, sink, ...(opts.signal ? [{ signal: opts.signal }] : []));
  } catch (err) {
    file?.destroy();
    if (opts.dest) await rm(opts.dest, { force: true });
    if (err instanceof ImageError) throw err;
    throw networkError('the image', url, err);
  }
  const got = hash.digest('hex');
  if (got !== expected.value.toLowerCase()) {
    if (opts.dest) await rm(opts.dest, { force: true });
    throw new ImageError(
      'checksum-mismatch',
      `the image at ${where(url)} does not match its checksum: ${expected.algorithm} expected ${expected.value.toLowerCase()}, got ${got} (${bytes} bytes read)`,
    );
  }
  return { bytes };
}
