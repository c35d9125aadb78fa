import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { readSecretKey } from '../../clients/secrets/secret-store';

const fresh = () => {
  const dir = mkdtempSync(join(tmpdir(), 'mf-secrets-'));
  const key = randomBytes(32);
  return { dir, key, store: new LocalSecretStore(dir, key) };
};

describe('LocalSecretStore', () => {
  it('round-trips, encrypts at rest and writes files with mode 0600', async () => {
    const { dir, store } = fresh();
    await store.write('ns', 'bmc', { username: 'admin', password: 'hunter2-very-secret' });
    expect(await store.read('ns', 'bmc')).toEqual({ username: 'admin', password: 'hunter2-very-secret' });
    const file = join(dir, 'ns', 'bmc.secret');
    expect(readFileSync(file, 'utf8')).not.toContain('hunter2');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(dir, 'ns'))).toEqual(['bmc.secret']);
  });

  it('holds names up to the longest file name allows, and says so for longer ones', async () => {
    const { dir, store } = fresh();
    const longest = 'n'.repeat(store.maxNameLength);
    // Before, the temporary file was named after the secret plus a suffix: ENAMETOOLONG for names of ~230 characters and more.
    await store.write('ns', longest, { userData: 'x' }, 'ns/h');
    expect(await store.read('ns', longest)).toEqual({ userData: 'x' });
    expect(await store.ownedBy('ns', 'ns/h')).toEqual([longest]);
    expect(readdirSync(join(dir, 'ns'))).toEqual([`${longest}.secret`]);
    await expect(store.read('ns', `${longest}n`)).rejects.toThrow(/at most 248/);
  });

  it('refuses to decrypt with another key or under another name', async () => {
    const { dir, store } = fresh();
    await store.write('ns', 'a', { password: 'p' });
    await expect(new LocalSecretStore(dir, randomBytes(32)).read('ns', 'a')).rejects.toThrow(/cannot be decrypted/);
    renameSync(join(dir, 'ns', 'a.secret'), join(dir, 'ns', 'b.secret'));
    await expect(store.read('ns', 'b')).rejects.toThrow(/cannot be decrypted/);
  });

  it('returns undefined for a missing secret and removes idempotently', async () => {
    const { store } = fresh();
    expect(await store.read('ns', 'nope')).toBeUndefined();
    await store.write('ns', 'x', { k: 'v' });
    await store.remove('ns', 'x');
    await store.remove('ns', 'x');
    expect(await store.read('ns', 'x')).toBeUndefined();
  });

  it('records the owning host, bound to the ciphertext, and lists what a host owns', async () => {
    const { dir, store } = fresh();
    await store.write('ns', 'a-bmc', { password: 'p' }, 'ns/a');
    await store.write('ns', 'a-user-data', { userData: 'u' }, 'ns/a');
    await store.write('ns', 'b-bmc', { password: 'q' }, 'ns/b');
    await store.write('ns', 'operator', { password: 'r' });
    expect(await store.ownerOf('ns', 'a-bmc')).toBe('ns/a');
    expect(await store.ownerOf('ns', 'operator')).toBeNull();
    expect(await store.ownerOf('ns', 'missing')).toBeUndefined();
    expect((await store.ownedBy('ns', 'ns/a')).sort()).toEqual(['a-bmc', 'a-user-data']);
    expect(await store.ownedBy('empty', 'empty/a')).toEqual([]);
    // An owner edited on disk does not decrypt: ownership cannot be moved to another host by hand.
    const file = join(dir, 'ns', 'b-bmc.secret');
    writeFileSync(file, readFileSync(file, 'utf8').replace('"ns/b"', '"ns/a"'));
    await expect(store.read('ns', 'b-bmc')).rejects.toThrow(/cannot be decrypted/);
  });

  it('names the secret and key, never the value, when a key is missing', async () => {
    const { store } = fresh();
    await store.write('ns', 'bmc', { username: 'admin', password: 's3cr3t-value' });
    await expect(readSecretKey(store, 'ns', 'gone', ['password'])).rejects.toThrow('Secret ns/gone not found');
    const err = await readSecretKey(store, 'ns', 'bmc', ['token']).catch((e: Error) => e);
    expect(String(err)).toMatch(/Secret ns\/bmc has no non-empty key "token"/);
    expect(String(err)).not.toContain('s3cr3t');
  });
});
