/**
 * The process that streams, for test/integration/image-stream-rss.test.ts:
 * puts one image into an image cache (clients/images/cache.ts, what the
 * worker's cacheImage runs), then verifies it again without keeping it
 * (downloadVerified, the direct provisioner's verifyImage), and prints its
 * own memory from /proc/self/status as JSON: VmRSS before streaming, VmHWM
 * (peak RSS) after each step, and the bytes read.
 * Arguments: <image URL> <sha256> <cache dir> <cache max bytes>.
 */
import { readFileSync } from 'node:fs';
import { ImageCache } from '../../clients/images/cache';
import { imageDispatcher } from '../../clients/images/http';
import { downloadVerified } from '../../clients/images/verified-download';

const [url = '', sha256 = '', dir = '', maxBytes = '0'] = process.argv.slice(2);
/** A /proc/self/status field in bytes. */
const status = (field: 'VmRSS' | 'VmHWM'): number => {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
  if (!m?.[1]) throw new Error(`no ${field} in /proc/self/status`);
  return Number(m[1]) * 1024;
};

const dispatcher = imageDispatcher({ timeoutMs: 120_000 });
const expected = { algorithm: 'sha256' as const, value: sha256 };
const cache = await new ImageCache({ dir, maxBytes: Number(maxBytes), dispatcher }).open();
const rssBefore = status('VmRSS');
const hwmBefore = status('VmHWM');
const cached = await cache.ensure(url, expected);
const hwmAfterCache = status('VmHWM');
const verified = await downloadVerified(dispatcher, url, expected);
const hwmAfterVerify = status('VmHWM');
await dispatcher.close();
console.log(JSON.stringify({ rssBefore, hwmBefore, hwmAfterCache, hwmAfterVerify, cachedKey: cached.key, verifiedBytes: verified.bytes, downloads: cache.downloads }));
