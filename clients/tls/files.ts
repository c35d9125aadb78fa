/**
 * PEM files of a TLS client, read when a client is built: the CA bundle it
 * trusts and, for mutual TLS, its certificate and private key. The paths are
 * checked at start (config/tls.ts); a file that went away since is an error
 * naming it.
 */
import { readFileSync } from 'node:fs';

export interface TlsFiles {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
}

export interface TlsMaterial {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
}

function read(what: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new Error(`cannot read the ${what} ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

export function readTlsFiles(files: TlsFiles): TlsMaterial {
  return {
    ...(files.caFile ? { ca: read('CA bundle', files.caFile) } : {}),
    ...(files.certFile ? { cert: read('client certificate', files.certFile) } : {}),
    ...(files.keyFile ? { key: read('client private key', files.keyFile) } : {}),
  };
}
