/**
 * Rotating an API token needs no restart: the API process reads its tokens
 * file again when the file is replaced or rewritten, and on SIGHUP (which
 * used to end the process). A file that does not parse leaves the old
 * credentials in force. The real API process against the test stack.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenHash } from '../../api/auth/token-file';
import { REPO_ROOT } from '../../config/env';
import { TEMPORAL_ADDRESS } from '../support/env';
import { waitFor } from '../support/harness';
import { unusedPort } from '../support/ports';

const dir = mkdtempSync(join(tmpdir(), 'mf-token-reload-'));
const tokensFile = join(dir, 'api-tokens');
const [first, second, third] = [0, 1, 2].map(() => randomBytes(24).toString('base64url')) as [string, string, string];
let api: ChildProcess;
let base: string;
let log = '';

/** Replaced as `mv` or an editor does: a new file renamed over the old one. */
function replaceTokens(...tokens: string[]): void {
  const tmp = `${tokensFile}.new`;
  writeFileSync(tmp, tokens.map((t, i) => `${tokenHash(t)} user-${i} viewer:*\n`).join(''), { mode: 0o600 });
  renameSync(tmp, tokensFile);
}

const status = async (token: string): Promise<number> => (await fetch(`${base}/v1/hosts?namespace=reload`, { headers: { authorization: `Bearer ${token}` } })).status;

beforeAll(async () => {
  replaceTokens(first);
  const port = await unusedPort();
  base = `http://127.0.0.1:${port}`;
  api = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'api', 'main.ts')], {
    cwd: REPO_ROOT,
    env: { ...process.env, TEMPORAL_ADDRESS, METALFLOW_API_PORT: String(port), METALFLOW_API_TOKENS_FILE: tokensFile, METALFLOW_SECRET_DIR: join(dir, 'secrets'), METALFLOW_SECRET_KEY: randomBytes(32).toString('base64'), METALFLOW_PAYLOAD_KEYS_FILE: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  api.stdout!.on('data', (b: Buffer) => void (log += b.toString()));
  api.stderr!.on('data', (b: Buffer) => void (log += b.toString()));
  await waitFor('the API answers', async () => (await status(first)) === 200, { timeoutMs: 60_000 });
}, 90_000);
afterAll(() => {
  api?.kill();
});

describe('the API\'s tokens file', () => {
  it('is read again when replaced: the new token works, the removed one is refused', async () => {
    expect(await status(second)).toBe(401);
    replaceTokens(second);
    await waitFor('the new token accepted', async () => (await status(second)) === 200);
    expect(await status(first)).toBe(401);
  });

  it('a file that does not parse leaves the credentials in force, and says why', async () => {
    writeFileSync(`${tokensFile}.new`, 'sha256:not-a-hash someone viewer:*\n');
    renameSync(`${tokensFile}.new`, tokensFile);
    await waitFor('the refusal logged', async () => log.includes('tokens file not taken'));
    expect(log).toMatch(/line 1: the credential must be sha256:<64 hex digits>/);
    expect(await status(second)).toBe(200);
  });

  it('is read again on SIGHUP, and the API keeps running', async () => {
    replaceTokens(second, third);
    await waitFor('the rewritten file read', async () => (await status(third)) === 200);
    const before = log.split('"reason":"SIGHUP"').length;
    api.kill('SIGHUP');
    await waitFor('the SIGHUP read logged', async () => log.split('"reason":"SIGHUP"').length > before);
    expect(api.exitCode).toBeNull();
    expect(await status(third)).toBe(200);
    expect(log).not.toContain(second);
    expect(log).not.toContain(third);
  });
});
