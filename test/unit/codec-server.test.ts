/**
 * The codec server's two verbs are not equally harmless: /decode lets a reader
 * see payloads, /encode lets a caller seal payloads a worker will trust
 * (a workflow input or signal that looks like metalflow's own). A viewer may
 * decode; only admin:* may encode.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCodecServer } from '../../api/codec-server';
import { TokenFile, tokenHash } from '../../api/auth/token-file';
import { EncryptionCodec, ENCRYPTED_ENCODING } from '../../clients/temporal/payload-codec';

const VIEWER = randomBytes(16).toString('hex');
const OPERATOR = randomBytes(16).toString('hex');
const ADMIN = randomBytes(16).toString('hex');
const codec = new EncryptionCodec([{ id: 'k1', key: randomBytes(32) }]);
let server: Server;
let url: string;

beforeAll(async () => {
  const tokens = TokenFile.parse(`${tokenHash(VIEWER)} v viewer:*\n${tokenHash(OPERATOR)} o operator:*\n${tokenHash(ADMIN)} a admin:*\n`, 'test tokens');
  server = createCodecServer({ codec, tokens, corsOrigins: [] });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => server?.close());

const plain = { metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: Buffer.from('{"forged":true}').toString('base64') };
const post = (path: string, token: string, payloads: unknown[]) =>
  fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ payloads }) });

describe('codec server /encode', () => {
  it('refuses viewers and operators, naming the role it needs', async () => {
    for (const token of [VIEWER, OPERATOR]) {
      const res = await post('/encode', token, [plain]);
      expect(res.status).toBe(403);
      expect(((await res.json()) as { message: string }).message).toMatch(/not admin:\*, which \/encode needs/);
    }
  });

  it('seals for admin:*, and a viewer still decodes what it sealed', async () => {
    const enc = await post('/encode', ADMIN, [plain]);
    expect(enc.status).toBe(200);
    const sealed = ((await enc.json()) as { payloads: Array<{ metadata: Record<string, string>; data: string }> }).payloads;
    expect(Buffer.from(sealed[0]!.metadata.encoding!, 'base64').toString()).toBe(ENCRYPTED_ENCODING);
    const dec = await post('/decode', VIEWER, sealed);
    expect(dec.status).toBe(200);
    const back = ((await dec.json()) as { payloads: Array<{ data: string }> }).payloads;
    expect(Buffer.from(back[0]!.data, 'base64').toString()).toBe('{"forged":true}');
  });
});

describe('codec server payload lists', () => {
  it('answers an empty list for a null or absent one (the Temporal CLI sends null for a query without --input)', async () => {
    for (const body of ['{"payloads":null}', '{}']) {
      for (const path of ['/decode', '/encode']) {
        const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` }, body });
        expect(res.status, `${path} ${body}`).toBe(200);
        expect(await res.json()).toEqual({ payloads: [] });
      }
    }
  });

  it('names the field when payloads is neither a list nor null', async () => {
    const res = await fetch(`${url}/decode`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${VIEWER}` }, body: '{"payloads":"x"}' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toBe('payloads: an array (or null for none) is required');
  });
});
