/**
 * A config drive as a guest reads it: downloaded from the URL the BMC was
 * given and read back with isoinfo (genisoimage's companion): the volume
 * id, the file list and each file's content.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const sha256 = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

export interface ConfigDriveIso {
  volumeId: string;
  /** Every path in the volume, sorted. */
  files: string[];
  read(path: string): string;
}

/** Downloads the drive at `url`, hands it to `check` and deletes it afterwards. */
export async function withConfigDriveIso<T>(url: string, check: (iso: ConfigDriveIso) => T): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'mf-drive-'));
  try {
    const iso = join(dir, 'drive.iso');
    writeFileSync(iso, Buffer.from(await (await fetch(url)).arrayBuffer()));
    const volumeId = /^Volume id: (.*)$/m.exec(execFileSync('isoinfo', ['-d', '-i', iso], { encoding: 'utf8' }))?.[1] ?? '';
    const files = execFileSync('isoinfo', ['-R', '-f', '-i', iso], { encoding: 'utf8' }).split('\n').filter(Boolean).sort();
    return check({ volumeId, files, read: (path) => execFileSync('isoinfo', ['-R', '-x', path, '-i', iso], { encoding: 'utf8' }) });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
