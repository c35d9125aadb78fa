/**
 * A file-backed secret store for running without Kubernetes: one file per
 * secret, mode 0600, AES-256-GCM with a configured key and the secret's
 * namespace/name as associated data (so a file copied under another name will
 * not decrypt). Writes are atomic (temp file + rename), so the API and workers
 * can share the folder.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { SecretData, SecretStore } from './secret-store';

interface Envelope {
  v: 1;
  iv: string;
  tag: string;
  data: string;
}

const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

export class LocalSecretStore implements SecretStore {
  private readonly key: Buffer;

  constructor(
    private readonly dir: string,
    key: Buffer,
  ) {
    if (key.length !== 32) throw new Error('the secret store key must be 32 bytes (base64 of 32 random bytes)');
    this.key = key;
  }

  private path(namespace: string, name: string): string {
    if (!NAME.test(namespace) || !NAME.test(name)) {
      throw new Error(`invalid secret reference ${namespace}/${name}: lower-case DNS names only`);
    }
    return join(this.dir, namespace, `${name}.secret`);
  }

  async read(namespace: string, name: string): Promise<SecretData | undefined> {
    let raw: string;
    try {
      raw = await readFile(this.path(namespace, name), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    const env = JSON.parse(raw) as Envelope;
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(env.iv, 'base64'));
    decipher.setAAD(Buffer.from(`${namespace}/${name}`));
    decipher.setAuthTag(Buffer.from(env.tag, 'base64'));
    try {
      const plain = Buffer.concat([decipher.update(Buffer.from(env.data, 'base64')), decipher.final()]);
      return JSON.parse(plain.toString('utf8')) as SecretData;
    } catch {
      throw new Error(`secret ${namespace}/${name} cannot be decrypted: wrong METALFLOW_SECRET_KEY or a damaged file`);
    }
  }

  async write(namespace: string, name: string, data: SecretData): Promise<void> {
    const file = this.path(namespace, name);
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(`${namespace}/${name}`));
    const data64 = Buffer.concat([cipher.update(JSON.stringify(data), 'utf8'), cipher.final()]).toString('base64');
    const env: Envelope = { v: 1, iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data64 };
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(tmp, JSON.stringify(env), { mode: 0o600 });
    await chmod(tmp, 0o600);
    await rename(tmp, file);
  }

  async remove(namespace: string, name: string): Promise<void> {
    await rm(this.path(namespace, name), { force: true });
  }
}

/**
 * The key from METALFLOW_SECRET_KEY (base64), or from a key file; for the demo
 * a key file is created once with a random key, mode 0600.
 */
export function loadSecretKey(opts: { key?: string; keyFile?: string; createIfMissing?: boolean }): Buffer {
  if (opts.key) return Buffer.from(opts.key, 'base64');
  if (!opts.keyFile) throw new Error('set METALFLOW_SECRET_KEY (base64 of 32 bytes) or METALFLOW_SECRET_KEY_FILE');
  if (!existsSync(opts.keyFile)) {
    if (!opts.createIfMissing) throw new Error(`secret key file ${opts.keyFile} does not exist`);
    writeFileSync(opts.keyFile, randomBytes(32).toString('base64'), { mode: 0o600, flag: 'wx' });
  }
  return Buffer.from(readFileSync(opts.keyFile, 'utf8').trim(), 'base64');
}
