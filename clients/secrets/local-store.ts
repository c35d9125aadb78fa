/**
 * A file-backed secret store for running without Kubernetes: one file per
 * secret, mode 0600, AES-256-GCM with a configured key and the secret's
 * namespace/name as associated data (so a file copied under another name will
 * not decrypt). Writes are atomic (temp file + rename), so the API and workers
 * can share the folder. The host a secret was written for is recorded beside
 * the ciphertext and bound to it through the associated data, so an edited
 * owner does not decrypt either.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { SecretData, SecretStore } from './secret-store';

interface Envelope {
  v: 1;
  iv: string;
  tag: string;
  data: string;
  /** Absent in files written before owners were recorded. */
  owner?: string;
}

const SUFFIX = '.secret';
const aad = (namespace: string, name: string, owner: string | undefined): Buffer =>
  Buffer.from(owner === undefined ? `${namespace}/${name}` : `${namespace}/${name}\0owner=${owner}`);

const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
/** `<name>.secret` must fit a file name (255 bytes on Linux file systems). */
export const LOCAL_SECRET_NAME_MAX = 255 - SUFFIX.length;

export class LocalSecretStore implements SecretStore {
  private readonly key: Buffer;
  readonly maxNameLength = LOCAL_SECRET_NAME_MAX;

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
    if (name.length > LOCAL_SECRET_NAME_MAX) {
      throw new Error(`secret name ${namespace}/${name.slice(0, 40)}… is ${name.length} characters; the local store holds names of at most ${LOCAL_SECRET_NAME_MAX}`);
    }
    return join(this.dir, namespace, `${name}${SUFFIX}`);
  }

  private async envelope(namespace: string, name: string): Promise<Envelope | undefined> {
    try {
      return JSON.parse(await readFile(this.path(namespace, name), 'utf8')) as Envelope;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async read(namespace: string, name: string): Promise<SecretData | undefined> {
    const env = await this.envelope(namespace, name);
    if (!env) return undefined;
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(env.iv, 'base64'));
    decipher.setAAD(aad(namespace, name, env.owner));
    decipher.setAuthTag(Buffer.from(env.tag, 'base64'));
    try {
      const plain = Buffer.concat([decipher.update(Buffer.from(env.data, 'base64')), decipher.final()]);
      return JSON.parse(plain.toString('utf8')) as SecretData;
    } catch {
      throw new Error(`secret ${namespace}/${name} cannot be decrypted: wrong METALFLOW_SECRET_KEY or a damaged file`);
    }
  }

  async write(namespace: string, name: string, data: SecretData, owner?: string): Promise<void> {
    const file = this.path(namespace, name);
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(aad(namespace, name, owner));
    const data64 = Buffer.concat([cipher.update(JSON.stringify(data), 'utf8'), cipher.final()]).toString('base64');
    const env: Envelope = { v: 1, iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data64, ...(owner === undefined ? {} : { owner }) };
    // Not `${file}.…`: the longest names leave no room in a file name for a suffix.
    const tmp = join(dirname(file), `.${process.pid}.${randomBytes(8).toString('hex')}.tmp`);
    await writeFile(tmp, JSON.stringify(env), { mode: 0o600 });
    await chmod(tmp, 0o600);
    await rename(tmp, file);
  }

  async remove(namespace: string, name: string): Promise<void> {
    await rm(this.path(namespace, name), { force: true });
  }

  async ownerOf(namespace: string, name: string): Promise<string | null | undefined> {
    const env = await this.envelope(namespace, name);
    return env ? (env.owner ?? null) : undefined;
  }

  async ownedBy(namespace: string, owner: string): Promise<string[]> {
    if (!NAME.test(namespace)) throw new Error(`invalid namespace ${namespace}: lower-case DNS names only`);
    let files: string[];
    try {
      files = await readdir(join(this.dir, namespace));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const names = files.filter((f) => f.endsWith(SUFFIX)).map((f) => f.slice(0, -SUFFIX.length));
    const owners = await Promise.all(names.map(async (n) => ((await this.ownerOf(namespace, n).catch(() => null)) === owner ? n : undefined)));
    return owners.filter((n): n is string => n !== undefined);
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
