/**
 * A whole-image download from Python's http.server, which closes the
 * connection once it has sent the file (HTTP/1.0, `Connection: close`) while
 * the download is still behind it: undici 7 killed the worker process here
 * with an uncatchable AssertionError (`assert(!this.paused)`,
 * nodejs/undici#5360; `make demo` with the image cache did it, and this file
 * did it on the code before). The download now goes through Node's own
 * client (clients/images/node-get.ts) and completes, verified.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imageDispatcher } from '../../clients/images/http';
import { downloadVerified } from '../../clients/images/verified-download';
import { waitFor } from '../support/harness';

const image = randomBytes(8 * 1024 * 1024);
const served = mkdtempSync(join(tmpdir(), 'mf-pyorigin-'));
let origin: ChildProcess;
let url: string;

const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });

beforeAll(async () => {
  writeFileSync(join(served, 'disk.qcow2'), image);
  const port = await freePort();
  origin = spawn('python3', ['-m', 'http.server', '--bind', '127.0.0.1', '--directory', served, String(port)], { stdio: 'ignore' });
  url = `http://127.0.0.1:${port}/disk.qcow2`;
  await waitFor('python http.server', async () => (await fetch(url, { method: 'HEAD' }).then((r) => r.ok, () => false)) || undefined, { timeoutMs: 30_000 });
});

afterAll(() => {
  origin?.kill();
});

describe('a whole-image download from a server that closes when it is done', () => {
  it('completes and verifies, several times over (the old client crashed the process on the first)', async () => {
    const expected = { algorithm: 'sha256' as const, value: createHash('sha256').update(image).digest('hex') };
    for (let i = 0; i < 3; i++) {
      const dest = join(mkdtempSync(join(tmpdir(), 'mf-close-')), 'image');
      const got = await downloadVerified(imageDispatcher({ timeoutMs: 10_000 }), url, expected, { dest });
      expect(got.bytes).toBe(image.length);
      expect(statSync(dest).size).toBe(image.length);
    }
  });
});
