/**
 * Checksum files, as Metal3 and Ironic accept them in spec.image.checksum:
 * a `SHA256SUMS`-style list (`<hash>  <file>` or `<hash> *<file>`, as
 * sha256sum writes them; BSD's `SHA256 (<file>) = <hash>` too) where the line
 * for the image's file name holds its hash, or a file holding one bare hash.
 * The algorithm follows from the hash's length (md5 32, sha256 64, sha512 128
 * hex digits); md5 is accepted with a warning, as Ironic deprecates it.
 */
import type { Dispatcher } from 'undici';
import type { Image } from '../../model/host';
import { ImageError, where } from './errors';
import { fetchStart } from './http';
import { sniffFormat } from './sniff';

export type ChecksumAlgorithm = 'md5' | 'sha256' | 'sha512';

export interface ResolvedChecksum {
  value: string;
  algorithm: ChecksumAlgorithm;
  /** Said to the operator (an Event), never an error: md5. */
  warning?: string;
}

/** A checksum file is a few lines per image; a release's whole list stays far below this. */
export const MAX_CHECKSUM_FILE_BYTES = 1 << 20;

const ALGORITHM_OF_LENGTH: Record<number, ChecksumAlgorithm> = { 32: 'md5', 64: 'sha256', 128: 'sha512' };

export const MD5_WARNING = 'the image checksum is md5, which Ironic deprecates; give a sha256 or sha512 checksum';

/** The last path segment of the image URL, as the checksum file names it. */
export function imageFileName(imageUrl: string): string {
  try {
    return decodeURIComponent(new URL(imageUrl).pathname.split('/').pop() ?? '');
  } catch {
    return '';
  }
}

function entry(line: string): { hash: string; name: string } | undefined {
  const bsd = /^[A-Za-z0-9-]+\s*\((.+)\)\s*=\s*([0-9A-Fa-f]+)$/.exec(line);
  if (bsd) return { name: bsd[1] ?? '', hash: bsd[2] ?? '' };
  const gnu = /^([0-9A-Fa-f]+)\s+\*?(.+)$/.exec(line);
  return gnu ? { hash: gnu[1] ?? '', name: (gnu[2] ?? '').trim() } : undefined;
}

const sameFile = (listed: string, file: string): boolean => listed === file || listed.replace(/^\.\//, '') === file || listed.endsWith(`/${file}`);

/**
 * The hash for `fileName` in a checksum file's text. `source` names the file
 * in errors (its host, never its query string); `declared` is checksumType.
 */
export function parseChecksumFile(text: string, fileName: string, source: string, declared?: Image['checksumType']): ResolvedChecksum {
  const lines = text
    .replace(/^\uFEFF/, '')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  let hash: string;
  const bare = lines.length === 1 && /^[0-9A-Fa-f]+$/.test(lines[0] ?? '') ? lines[0] : undefined;
  if (bare !== undefined) {
    hash = bare;
  } else {
    const entries = lines.map(entry).filter((e): e is { hash: string; name: string } => e !== undefined);
    if (entries.length === 0) {
      throw new ImageError('checksum-file', `the checksum file at ${source} holds neither a bare hash nor "<hash>  <file name>" lines`);
    }
    const found = entries.find((e) => sameFile(e.name, fileName))?.hash;
    if (found === undefined) {
      throw new ImageError(
        'checksum-missing',
        `the checksum file at ${source} has no line for the image's file name ${fileName || '(none: the image URL has no file name)'} (it lists ${entries.length} file${entries.length === 1 ? '' : 's'})`,
      );
    }
    hash = found;
  }
  const algorithm = ALGORITHM_OF_LENGTH[hash.length];
  if (!algorithm) {
    throw new ImageError('checksum-file', `the checksum for ${fileName} in the file at ${source} has ${hash.length} hex digits, which fits no supported algorithm (md5: 32, sha256: 64, sha512: 128)`);
  }
  if (declared && declared !== 'auto' && declared !== algorithm) {
    throw new ImageError('checksum-file', `spec.image.checksumType is ${declared}, but the checksum for ${fileName} in the file at ${source} is ${algorithm} (${hash.length} hex digits)`);
  }
  return { value: hash.toLowerCase(), algorithm, ...(algorithm === 'md5' ? { warning: MD5_WARNING } : {}) };
}

/** Downloads the checksum file (at most 1 MiB) and finds the image's hash in it. */
export async function resolveChecksumUrl(dispatcher: Dispatcher, image: Pick<Image, 'url' | 'checksum' | 'checksumType'>): Promise<ResolvedChecksum> {
  const url = image.checksum ?? '';
  const source = where(url);
  const answer = await fetchStart(dispatcher, 'checksum file', url, { method: 'GET', maxBytes: MAX_CHECKSUM_FILE_BYTES });
  if (answer.truncated) throw new ImageError('checksum-file', `the checksum file at ${source} is bigger than ${MAX_CHECKSUM_FILE_BYTES} bytes: not a checksum file`);
  if (sniffFormat(answer.body, answer.headers['content-type']) === 'html') {
    throw new ImageError('html-page', `the checksum file at ${source} is an HTML page, not a checksum file: most likely a login or error page`);
  }
  if (answer.body.includes(0)) throw new ImageError('checksum-file', `the checksum file at ${source} is binary, not a checksum file`);
  return parseChecksumFile(answer.body.toString('utf8'), imageFileName(image.url), source, image.checksumType);
}
