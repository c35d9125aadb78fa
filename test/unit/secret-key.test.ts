/** activities/common/secret-key.ts: BMC credentials from one read of their Secret; a missing Secret or key names both, never a value. */
import { describe, expect, it } from 'vitest';
import { readCredentials, readSecretKey } from '../../activities/common/secret-key';
import type { SecretData, SecretReader } from '../../clients/secrets/secret-store';

function store(secrets: Record<string, SecretData>): SecretReader & { reads: number } {
  const s = {
    reads: 0,
    read: async (namespace: string, name: string) => {
      s.reads++;
      const data = secrets[`${namespace}/${name}`];
      return data ? { ...data } : undefined;
    },
  };
  return s;
}

describe('readCredentials', () => {
  it('takes username and password from one read of the Secret', async () => {
    const s = store({ 'ns/bmc': { username: 'admin', password: 'pw-1' } });
    expect(await readCredentials(s, 'ns', 'bmc')).toEqual({ username: 'admin', password: 'pw-1' });
    expect(s.reads).toBe(1);
  });

  it('reads the Secret again at each use: a changed Secret is what the next use gets', async () => {
    const secrets: Record<string, SecretData> = { 'ns/bmc': { username: 'admin', password: 'pw-1' } };
    const s = store(secrets);
    await readCredentials(s, 'ns', 'bmc');
    secrets['ns/bmc'] = { username: 'admin', password: 'pw-2' };
    expect((await readCredentials(s, 'ns', 'bmc')).password).toBe('pw-2');
    expect(s.reads).toBe(2);
  });

  it('a missing Secret or key is the host\'s failure, naming them and no value', async () => {
    await expect(readCredentials(store({}), 'ns', 'bmc')).rejects.toThrow('Secret ns/bmc not found');
    const err = await readCredentials(store({ 'ns/bmc': { username: 'admin-secret-user' } }), 'ns', 'bmc').then(() => new Error('read'), (e: unknown) => e as Error);
    expect(err.message).toBe('Secret ns/bmc has no non-empty key "password"');
    expect(err.message).not.toContain('admin-secret-user');
    expect(await readSecretKey(store({ 'ns/ud': { value: 'x' } }), 'ns', 'ud', ['userData', 'value'])).toBe('x');
  });
});
