/**
 * A file-backed secret store for running without Kubernetes: one file per
 * secret, mode 0600, AES-256-GCM with a configured key and the secret's
 * namespace/name as associated data (so a file copied under another name will
 * not decrypt). Writes are atomic (temp file + rename), so the API and workers
 * can share the folder. The host a secret was written for is recorded beside
 * the ciphertext and bound to it through the associated data, so an edited
 * owner does not decrypt either. API replicas sharing the folder take a
 * per-host lease in it (`.leases/`, file-lease.ts) around each change of a
 * host's secrets.
 *
 * Which secrets a host owns is answered from an index beside the files
 * (`.owners/<sha256 of the owner>/<name>`, empty markers), not by reading every
 * secret of the namespace: the API asks it on every create and delete, and at
 * 1,000 hosts a scan per request made the creates quadratic and ran the API out
 * of file descriptors (EMFILE, 200 creates each opening every file at once).
 * A marker is written before its secret, so a crash leaves at most a marker
 * without a secret, never an owned secret the index misses; every marker is
 * checked against the secret's own recorded owner before it is believed.
 * Files written before the index existed are indexed once per namespace by one
 * scan (then `.owners/.complete`).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Lease, LeaseOptions, SecretData, SecretStore } from './secret-store';
import { FileLeases } from './file-lease';

interface Envelope {
  v: 1;
  iv: string;
  tag: string;
  data: string;
  /** Absent in files written before owners were recorded. */
  owner?: string;
}

const SUFFIX = '.secret';
const INDEX = '.owners';
const COMPLETE = '.complete';
/** Beside the namespaces' folders; a dot name is never a namespace. */
const LEASES = '.leases';
/** Files read at once by a scan: bounded, so a large namespace cannot exhaust the process's descriptors. */
const SCAN_CONCURRENCY = 16;
const ownerKey = (owner: string): string => createHash('sha256').update(owner).digest('hex');
const missing = (err: unknown): boolean => (err as NodeJS.ErrnoException).code === 'ENOENT';

/** `fn` over `items`, at most `limit` at a time, results in order. */
async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}
const aad = (namespace: string, name: string, owner: string | undefined): Buffer =>
  Buffer.from(owner === undefined ? `${namespace}/${name}` : `${namespace}/${name}\0owner=${owner}`);

const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
/** `<name>.secret` must fit a file name (255 bytes on Linux file systems). */
export const LOCAL_SECRET_NAME_MAX = 255 - SUFFIX.length;

export class LocalSecretStore implements SecretStore {
  private readonly key: Buffer;
  readonly maxNameLength = LOCAL_SECRET_NAME_MAX;
  /** Namespaces whose index is known complete, or being completed by a scan (shared by concurrent callers). */
  private readonly indexed = new Map<string, Promise<void>>();
  private readonly leases: FileLeases;

  constructor(
    private readonly dir: string,
    key: Buffer,
    opts: { leaseTtlMs?: number } = {},
  ) {
    if (key.length !== 32) throw new Error('the secret store key must be 32 bytes (base64 of 32 random bytes)');
    this.key = key;
    this.leases = new FileLeases(join(dir, LEASES), opts.leaseTtlMs);
  }

  lease(namespace: string, name: string, opts: LeaseOptions): Promise<Lease> {
    if (!NAME.test(namespace) || !NAME.test(name)) throw new Error(`invalid lease name ${namespace}/${name}: lower-case DNS names only`);
    return this.leases.acquire(join(namespace, name), opts);
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
    const before = await this.ownerOf(namespace, name).catch(() => null);
    if (owner !== undefined) await this.mark(namespace, name, owner);
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
    if (typeof before === 'string' && before !== owner) await this.unmark(namespace, name, before);
  }

  async remove(namespace: string, name: string): Promise<void> {
    const owner = await this.ownerOf(namespace, name).catch(() => null);
    await rm(this.path(namespace, name), { force: true });
    if (typeof owner === 'string') await this.unmark(namespace, name, owner);
  }

  async ownerOf(namespace: string, name: string): Promise<string | null | undefined> {
    const env = await this.envelope(namespace, name);
    return env ? (env.owner ?? null) : undefined;
  }

  async ownedBy(namespace: string, owner: string): Promise<string[]> {
    if (!NAME.test(namespace)) throw new Error(`invalid namespace ${namespace}: lower-case DNS names only`);
    await this.ensureIndexed(namespace);
    let marked: string[];
    try {
      marked = await readdir(join(this.dir, namespace, INDEX, ownerKey(owner)));
    } catch (err) {
      if (missing(err)) return [];
      throw err;
    }
    // A marker whose secret is gone or now another's (a crash between the two writes) is left alone:
    // removing it here could race a write that has put the marker down and not yet the secret.
    const owned = await mapLimited(marked, SCAN_CONCURRENCY, async (name) =>
      (await this.ownerOf(namespace, name).catch(() => null)) === owner ? name : undefined,
    );
    return owned.filter((n): n is string => n !== undefined);
  }

  /** Records `name` as `owner`'s in the index (before the secret itself is written). */
  private async mark(namespace: string, name: string, owner: string): Promise<void> {
    const dir = join(this.dir, namespace, INDEX, ownerKey(owner));
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeFile(join(dir, name), '', { mode: 0o600 });
  }

  private async unmark(namespace: string, name: string, owner: string): Promise<void> {
    await rm(join(this.dir, namespace, INDEX, ownerKey(owner), name), { force: true });
  }

  /** Indexes the namespace's secrets written before the index existed: one scan, once. */
  private ensureIndexed(namespace: string): Promise<void> {
    let done = this.indexed.get(namespace);
    if (!done) {
      done = this.indexNamespace(namespace);
      this.indexed.set(namespace, done);
      done.catch(() => this.indexed.delete(namespace));
    }
    return done;
  }

  private async indexNamespace(namespace: string): Promise<void> {
    const stamp = join(this.dir, namespace, INDEX, COMPLETE);
    if (existsSync(stamp)) return;
    let files: string[];
    try {
      files = await readdir(join(this.dir, namespace));
    } catch (err) {
      if (missing(err)) return;
      throw err;
    }
    const names = files.filter((f) => f.endsWith(SUFFIX) && !f.startsWith('.')).map((f) => f.slice(0, -SUFFIX.length));
    await mapLimited(names, SCAN_CONCURRENCY, async (name) => {
      const owner = await this.ownerOf(namespace, name).catch(() => null);
      if (typeof owner === 'string') await this.mark(namespace, name, owner);
    });
    await mkdir(dirname(stamp), { recursive: true, mode: 0o700 });
    await writeFile(stamp, new Date().toISOString(), { mode: 0o600 });
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
