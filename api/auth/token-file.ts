/**
 * The API's credentials file (METALFLOW_API_TOKENS_FILE), one entry a line:
 *
 *   sha256:<hex of the token's SHA-256>  <subject>  <role:namespace,...>
 *   x509:<client certificate CN>         <subject>  <role:namespace,...>
 *
 * Only token hashes are stored, so the file leaks no usable token; a presented
 * token is hashed and compared with timingSafeEqual. `#` starts a comment.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseGrants, type Grant, type Principal } from './roles';

interface Entry {
  hash?: Buffer;
  certCN?: string;
  subject: string;
  grants: Grant[];
}

export function tokenHash(token: string): string {
  return `sha256:${createHash('sha256').update(token, 'utf8').digest('hex')}`;
}

export class TokenFile {
  private constructor(private entries: Entry[]) {}

  /** Takes another file's credentials in place, so holders of this object see a rotated file. */
  adopt(other: TokenFile): void {
    this.entries = other.entries;
  }

  get size(): number {
    return this.entries.length;
  }

  static parse(text: string, where: string): TokenFile {
    const entries: Entry[] = [];
    text.split('\n').forEach((raw, i) => {
      const line = raw.replace(/#.*/, '').trim();
      if (!line) return;
      const at = `${where} line ${i + 1}`;
      const [cred, subject, grants, extra] = line.split(/\s+/);
      if (!cred || !subject || !grants || extra !== undefined) {
        throw new Error(`${at}: expected "<sha256:hex|x509:CN> <subject> <role:namespace,...>"`);
      }
      const entry: Entry = { subject, grants: parseGrants(grants, at) };
      if (/^sha256:[0-9a-f]{64}$/.test(cred)) entry.hash = Buffer.from(cred.slice(7), 'hex');
      else if (cred.startsWith('x509:') && cred.length > 5) entry.certCN = cred.slice(5);
      else throw new Error(`${at}: the credential must be sha256:<64 hex digits> (the token's hash, never the token) or x509:<certificate CN>`);
      entries.push(entry);
    });
    if (entries.length === 0) throw new Error(`${where}: no credentials`);
    return new TokenFile(entries);
  }

  static load(path: string): TokenFile {
    return TokenFile.parse(readFileSync(path, 'utf8'), path);
  }

  byToken(token: string): Principal | undefined {
    const presented = createHash('sha256').update(token, 'utf8').digest();
    // Every entry is compared, so the time taken does not tell which one matched.
    let found: Entry | undefined;
    for (const e of this.entries) if (e.hash && timingSafeEqual(e.hash, presented) && !found) found = e;
    return found && { subject: found.subject, grants: found.grants, via: 'token' };
  }

  byCertificate(cn: string): Principal | undefined {
    const e = this.entries.find((x) => x.certCN === cn);
    return e && { subject: e.subject, grants: e.grants, via: 'certificate' };
  }
}
