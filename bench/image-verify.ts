/**
 * `npm run bench:image-verify -- [--mib 2048]`: how fast the image cache
 * verifies while it streams, and that it holds nothing in memory. A loopback
 * HTTP server sends `--mib` MiB (one 1 MiB block repeated: nothing on disk or
 * in memory at the origin); the image is downloaded and hashed (sha256) into
 * the cache (written to disk), then verified only (hashed and dropped, as
 * verifyImage does). Prints MB/s and the process's peak RSS before and after.
 * A figure, never asserted.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ImageCache } from '../clients/images/cache';
import { imageDispatcher } from '../clients/images/http';
import { downloadVerified } from '../clients/images/verified-download';

const { values } = parseArgs({ options: { mib: { type: 'string', default: '2048' } } });
const mib = Number(values.mib);
const block = randomBytes(1 << 20);
const hash = createHash('sha256');
for (let i = 0; i < mib; i++) hash.update(block);
const expected = { algorithm: 'sha256' as const, value: hash.digest('hex') };

const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-length': mib * block.length });
  let sent = 0;
  const pump = (): void => {
    while (sent < mib) {
      sent += 1;
      if (!res.write(block)) return void res.once('drain', pump);
    }
    res.end();
  };
  pump();
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/bench.raw`;
const dispatcher = imageDispatcher({ timeoutMs: 60_000 });
const rss = (): string => `${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`;
const dir = mkdtempSync(join(tmpdir(), 'metalflow-bench-cache-'));
try {
  console.log(`${mib} MiB, sha256; RSS at start ${rss()}`);
  let t = performance.now();
  const cache = await new ImageCache({ dir, maxBytes: (mib + 1) * 2 ** 20, dispatcher }).open();
  await cache.ensure(url, expected);
  let s = (performance.now() - t) / 1000;
  console.log(`into the cache (written to disk): ${((mib * 2 ** 20) / 1e6 / s).toFixed(0)} MB/s, RSS ${rss()}`);
  t = performance.now();
  await downloadVerified(dispatcher, url, expected);
  s = (performance.now() - t) / 1000;
  console.log(`verify only (hashed, dropped): ${((mib * 2 ** 20) / 1e6 / s).toFixed(0)} MB/s, RSS ${rss()}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
  server.close();
  await dispatcher.close();
}
