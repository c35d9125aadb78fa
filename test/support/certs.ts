/**
 * A throwaway certificate authority made with the openssl CLI, for tests of
 * TLS and mutual TLS against real peers: a CA and leaf certificates it signs
 * (servers for 127.0.0.1 and localhost, clients for mTLS), one day valid.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestPki {
  dir: string;
  /** The CA certificate (PEM): the bundle a client or a server trusts. */
  caFile: string;
  crt(name: string): string;
  key(name: string): string;
}

export type LeafKind = 'server' | 'client';

const EXTENSIONS: Record<LeafKind, string> = {
  server: 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
  client: 'extendedKeyUsage=clientAuth\n',
};

/** A CA named `caName` and one leaf per entry (file names and CN are the entry's name). */
export function makePki(leaves: Record<string, LeafKind>, caName = 'metalflow test CA'): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'metalflow-pki-'));
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', `/CN=${caName}`, '-keyout', 'ca.key', '-out', 'ca.crt');
  for (const [name, kind] of Object.entries(leaves)) {
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.csr`);
    writeFileSync(join(dir, `${name}.ext`), EXTENSIONS[kind]);
    ssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1', '-extfile', `${name}.ext`, '-out', `${name}.crt`);
  }
  return { dir, caFile: join(dir, 'ca.crt'), crt: (name) => join(dir, `${name}.crt`), key: (name) => join(dir, `${name}.key`) };
}
