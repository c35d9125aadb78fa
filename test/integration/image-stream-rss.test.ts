/**
 * Streaming only: a 2 GiB sparse image, served by `python3 -m http.server`
 * in its own process, is put into an image cache and then verified again by
 * a process of its own (test/support/stream-rss-child.ts, the code the
 * worker's cacheImage and verifyImage run). That process's peak RSS
 * (VmHWM) must grow by far less than the image: a bound on memory, never on time.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import { unusedPort } from '../support/ports';
import { waitFor } from '../support/harness';

const run = promisify(execFile);
const IMAGE_BYTES = 2 * 2 ** 30;
/** Far under the image's 2 GiB: buffers and the HTTP client, never the image. */
const MAX_GROWTH = 256 * 2 ** 20;
const MiB = (n: number): string => `${(n / 2 ** 20).toFixed(0)} MiB`;

let dir = '';
let origin: ChildProcess | undefined;
let url = '';
let sha256 = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'metalflow-rss-'));
  const served = join(dir, 'origin');
  await run('mkdir', [served]);
  // Sparse: 2 GiB of zeros that take no disk at the origin.
  const file = await open(join(served, 'sparse.img'), 'w');
  await file.truncate(IMAGE_BYTES);
  await file.close();
  sha256 = (await run('sha256sum', [join(served, 'sparse.img')], { maxBuffer: 1 << 20 })).stdout.split(' ')[0] ?? '';
  const port = await unusedPort();
  origin = spawn('python3', ['-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', served], { stdio: 'ignore' });
  url = `http://127.0.0.1:${port}/sparse.img`;
  await waitFor('the origin', async () => (await fetch(url, { method: 'HEAD' }).then((r) => r.ok, () => false)) || undefined, { timeoutMs: 30_000 });
}, 180_000);

afterAll(() => {
  origin?.kill('SIGTERM');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('streaming a 2 GiB sparse image', () => {
  it("keeps the streaming process's peak RSS flat, into the cache and verified again", async () => {
    const child = await run(
      process.execPath,
      ['--import', 'tsx', join(REPO_ROOT, 'test', 'support', 'stream-rss-child.ts'), url, sha256, join(dir, 'cache'), String(IMAGE_BYTES + 2 ** 20)],
      { cwd: REPO_ROOT, maxBuffer: 1 << 20, timeout: 900_000 },
    );
    const m = JSON.parse(child.stdout.trim().split('\n').pop() ?? '{}') as {
      rssBefore: number;
      hwmBefore: number;
      hwmAfterCache: number;
      hwmAfterVerify: number;
      cachedKey: string;
      verifiedBytes: number;
      downloads: number;
    };
    console.log(`RSS before ${MiB(m.rssBefore)}; peak after caching 2 GiB ${MiB(m.hwmAfterCache)}; after verifying it again ${MiB(m.hwmAfterVerify)}`);
    expect(m.cachedKey).toBe(`sha256-${sha256}`);
    expect(m.downloads).toBe(1);
    expect(m.verifiedBytes).toBe(IMAGE_BYTES);
    expect(m.hwmAfterCache - m.rssBefore).toBeLessThan(MAX_GROWTH);
    expect(m.hwmAfterVerify - m.rssBefore).toBeLessThan(MAX_GROWTH);
  }, 900_000);
});
