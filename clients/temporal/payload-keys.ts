/**
 * The payload key ring, from a file of `id:base64-of-32-bytes` lines (first
 * line = the key that encrypts; `#` comments and blank lines ignored). Rotate
 * by putting a new line first and keeping the old ones until no history that
 * needs them is kept any more.
 */
import { readFileSync } from 'node:fs';
import type { DataConverter } from '@temporalio/common';
import { EncryptionCodec, type PayloadKey } from './payload-codec';

const ID = /^[A-Za-z0-9._-]{1,64}$/;

export function parsePayloadKeys(content: string, source: string): PayloadKey[] {
  const keys: PayloadKey[] = [];
  content.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const at = `${source} line ${i + 1}`;
    const colon = line.indexOf(':');
    if (colon < 0) throw new Error(`${at}: expected "<id>:<base64 of 32 bytes>"`);
    const id = line.slice(0, colon);
    const b64 = line.slice(colon + 1).trim();
    if (!ID.test(id)) throw new Error(`${at}: key id "${id}" must be 1-64 letters, digits, '.', '_' or '-'`);
    if (keys.some((k) => k.id === id)) throw new Error(`${at}: key id "${id}" appears twice`);
    const key = Buffer.from(b64, 'base64');
    if (key.length !== 32 || key.toString('base64') !== b64.replace(/\s/g, '')) {
      throw new Error(`${at}: key "${id}" must be the base64 of exactly 32 bytes (got ${key.length} bytes)`);
    }
    keys.push({ id, key });
  });
  if (keys.length === 0) throw new Error(`${source}: no key (expected "<id>:<base64 of 32 bytes>" lines)`);
  return keys;
}

/** The data converter every metalflow client and worker uses: encrypted when a key file is configured. */
export function metalflowDataConverter(keysFile: string | undefined): DataConverter | undefined {
  if (!keysFile) return undefined;
  return { payloadCodecs: [new EncryptionCodec(parsePayloadKeys(readFileSync(keysFile, 'utf8'), keysFile))] };
}
