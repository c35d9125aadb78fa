/**
 * The OpenStack config drive as cloud-init and Ignition read it: an ISO 9660
 * volume labelled `config-2` holding `openstack/latest/meta_data.json`,
 * `user_data` and `network_data.json`. Built by genisoimage (cdrkit, Debian's
 * `genisoimage` package, in scripts/apt-packages.txt) with the options
 * openstacksdk's `make_configdrive` gives it (what Ironic's API builds its
 * config drives with), rather than ISO 9660 written by hand: no npm package
 * that writes ISO 9660 is maintained and installed here.
 *
 * The data is a secret: the staging folder is the owner's only (0700) and
 * removed at once, and errors carry genisoimage's message, never the data.
 *
 * Kept in a store served by the image cache's HTTP server under an
 * unguessable name (`/configdrive/<host>-<token>.iso`, the token an HMAC of
 * the content under the store's own key), so the URL is a credential: it is
 * handed to the BMC and never returned to a workflow.
 */
import { execFile } from 'node:child_process';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ConfigDriveData } from '../../model/config-data';
import type { HostRef } from '../../model/host';

const run = promisify(execFile);

/** openstacksdk's make_configdrive options: Rock Ridge and Joliet, lower-case and dotted names kept. */
const GENISOIMAGE_ARGS = ['-ldots', '-allow-lowercase', '-allow-multidot', '-l', '-publisher', 'metalflow', '-quiet', '-J', '-r', '-V', 'config-2'];

/** The ISO's bytes for `data`, built in a private staging folder that is removed afterwards. */
export async function buildConfigDrive(data: ConfigDriveData): Promise<Buffer> {
  const stage = await mkdtemp(join(tmpdir(), 'metalflow-configdrive-'));
  try {
    const latest = join(stage, 'root', 'openstack', 'latest');
    await mkdir(latest, { recursive: true, mode: 0o700 });
    await writeFile(join(latest, 'meta_data.json'), JSON.stringify(data.meta_data), { mode: 0o600 });
    if (data.user_data !== undefined) await writeFile(join(latest, 'user_data'), data.user_data, { mode: 0o600 });
    if (data.network_data !== undefined) await writeFile(join(latest, 'network_data.json'), JSON.stringify(data.network_data), { mode: 0o600 });
    const out = join(stage, 'configdrive.iso');
    try {
      await run('genisoimage', [...GENISOIMAGE_ARGS, '-o', out, join(stage, 'root')], { maxBuffer: 1 << 20 });
    } catch (err) {
      const e = err as { code?: unknown; stderr?: string; message: string };
      const why = e.code === 'ENOENT' ? 'genisoimage is not installed (Debian package genisoimage)' : (e.stderr || e.message).trim().split('\n').slice(-2).join(' ');
      throw new Error(`cannot build the config drive: ${why}`);
    }
    return readFileSync(out);
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

const HOST_PART = (ref: HostRef): string => createHash('sha256').update(`${ref.namespace}/${ref.name}`).digest('hex').slice(0, 16);
const FILE = /^([0-9a-f]{16})-([0-9a-f]{64})\.iso$/;

/** Config drives on disk, one per host, served under names only their holder knows. */
export class ConfigDriveStore {
  private readonly dir: string;
  private readonly key: Buffer;

  constructor(cacheDir: string) {
    this.dir = join(cacheDir, 'configdrive');
    const keyFile = join(cacheDir, 'configdrive.key');
    if (!existsSync(keyFile)) writeFileSync(keyFile, randomBytes(32), { mode: 0o600, flag: 'wx' });
    this.key = readFileSync(keyFile);
  }

  /**
   * Stores the host's drive and returns its path on the server. The same
   * content gives the same name (a retried activity finds it inserted);
   * the host's older drives are deleted.
   */
  async put(ref: HostRef, iso: Buffer): Promise<string> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const host = HOST_PART(ref);
    const token = createHmac('sha256', this.key).update(host).update(iso).digest('hex');
    const name = `${host}-${token}.iso`;
    const partial = join(this.dir, `.${name}.${randomBytes(4).toString('hex')}`);
    await writeFile(partial, iso, { mode: 0o600 });
    await rename(partial, join(this.dir, name));
    await this.removeHost(ref, name);
    return `/configdrive/${name}`;
  }

  /** Deletes the host's drives (all, or all but `keep`). */
  async removeHost(ref: HostRef, keep?: string): Promise<void> {
    const host = HOST_PART(ref);
    const names = existsSync(this.dir) ? await readdir(this.dir) : [];
    await Promise.all(names.filter((n) => n.startsWith(`${host}-`) && n !== keep).map((n) => rm(join(this.dir, n), { force: true })));
  }

  /** The cache server's route for `/configdrive/<name>`: the file, or a 404 that says nothing about why. */
  route = (req: IncomingMessage, res: ServerResponse, path: string): boolean => {
    const m = /^\/configdrive\/([^/]+)$/.exec(path);
    if (!m) return false;
    const name = m[1] ?? '';
    const file = join(this.dir, name);
    if (!FILE.test(name) || !existsSync(file)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return true;
    }
    void stat(file).then(
      (st) => {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': st.size, 'cache-control': 'no-store' });
        if (req.method === 'HEAD') return void res.end();
        createReadStream(file).on('error', () => res.destroy()).pipe(res);
      },
      () => res.writeHead(404).end(),
    );
    return true;
  };
}
