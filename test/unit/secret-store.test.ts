import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { readSecretKey } from '../../activities/common/secret-key';

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
    // Nothing but the secret and the owner index (no temporary file left behind).
    expect(readdirSync(join(dir, 'ns')).sort()).toEqual(['.owners', `${longest}.secret`]);
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

  describe('owner index', () => {
    it('indexes secrets written before it existed with one scan, then answers from the index alone', async () => {
      const { dir, key, store } = fresh();
      await store.write('ns', 'a-bmc', { password: 'p' }, 'ns/a');
      await store.write('ns', 'b-bmc', { password: 'q' }, 'ns/b');
      // As an older metalflow left them: secrets with owners, no index.
      rmSync(join(dir, 'ns', '.owners'), { recursive: true });
      const upgraded = new LocalSecretStore(dir, key);
      expect(await upgraded.ownedBy('ns', 'ns/a')).toEqual(['a-bmc']);
      expect(existsSync(join(dir, 'ns', '.owners', '.complete'))).toBe(true);
      // After the scan, a file that reached the folder without the index (copied in by hand) is not
      // found: the answer comes from the index, not from reading every secret again.
      copyFileSync(join(dir, 'ns', 'a-bmc.secret'), join(dir, 'ns', 'a-copy.secret'));
      expect(await new LocalSecretStore(dir, key).ownedBy('ns', 'ns/a')).toEqual(['a-bmc']);
    });

    it('follows removals and a secret rewritten for another owner, and ignores a marker without its secret', async () => {
      const { dir, store } = fresh();
      await store.write('ns', 'shared', { password: 'p' }, 'ns/a');
      await store.write('ns', 'a-user-data', { userData: 'u' }, 'ns/a');
      await store.write('ns', 'shared', { password: 'p2' }, 'ns/b');
      expect(await store.ownedBy('ns', 'ns/a')).toEqual(['a-user-data']);
      expect(await store.ownedBy('ns', 'ns/b')).toEqual(['shared']);
      await store.remove('ns', 'a-user-data');
      expect(await store.ownedBy('ns', 'ns/a')).toEqual([]);
      // A crash after the marker and before the secret: the marker alone owns nothing.
      await store.write('ns', 'half', { password: 'h' }, 'ns/a');
      rmSync(join(dir, 'ns', 'half.secret'));
      expect(await store.ownedBy('ns', 'ns/a')).toEqual([]);
      // Without an owner, a secret is in no one's index.
      await store.write('ns', 'operator', { password: 'o' });
      expect(await store.ownedBy('ns', 'ns/b')).toEqual(['shared']);
    });

    it('answers 200 hosts asking at once over 2,000 unindexed secrets with one shared scan', async () => {
      const { dir, key, store } = fresh();
      const hosts = Array.from({ length: 200 }, (_, i) => `h-${i}`);
      for (const h of hosts) await store.write('ns', `${h}-bmc`, { password: h }, `ns/${h}`);
      // 1,800 secrets of other owners, copied in with their owners (as an older metalflow wrote them).
      for (let i = 0; i < 1800; i++) copyFileSync(join(dir, 'ns', `h-${i % 200}-bmc.secret`), join(dir, 'ns', `x-${i}.secret`));
      rmSync(join(dir, 'ns', '.owners'), { recursive: true });
      const upgraded = new LocalSecretStore(dir, key);
      const answers = await Promise.all(hosts.map((h) => upgraded.ownedBy('ns', `ns/${h}`)));
      // A copy under another name does not decrypt (the name is bound in), but its recorded owner is
      // what the index goes by, as the scan did: each host owns its own secret and its nine copies.
      expect(answers.map((a) => a.length)).toEqual(hosts.map(() => 10));
      expect(answers[7]).toContain('h-7-bmc');
    });
  });
});
