import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { ENCRYPTED_ENCODING, EncryptionCodec, KEY_ID_METADATA, PayloadDecryptError } from '../../clients/temporal/payload-codec';
import { parsePayloadKeys } from '../../clients/temporal/payload-keys';

const key = (id: string) => ({ id, key: randomBytes(32) });
const payload = (v: unknown) => defaultPayloadConverter.toPayload(v);
const text = (b: Uint8Array | null | undefined) => Buffer.from(b ?? []).toString('utf8');

describe('EncryptionCodec', () => {
  const secret = { image: 'https://bucket/img.qcow2?X-Amz-Signature=abc123', bmc: 'redfish://10.0.0.5/redfish/v1/Systems/1' };

  it('round-trips a payload and leaves none of its text in the encrypted one', async () => {
    const codec = new EncryptionCodec([key('k1')]);
    const [enc] = await codec.encode([payload(secret)]);
    expect(text(enc!.metadata!.encoding)).toBe(ENCRYPTED_ENCODING);
    expect(text(enc!.metadata![KEY_ID_METADATA])).toBe('k1');
    expect(text(enc!.data)).not.toContain('X-Amz-Signature');
    expect(text(enc!.data)).not.toContain('10.0.0.5');
    const [dec] = await codec.decode([enc!]);
    expect(defaultPayloadConverter.fromPayload(dec!)).toEqual(secret);
  });

  it('decodes what an older key encrypted after rotation, and encrypts with the newest', async () => {
    const k1 = key('k1');
    const k2 = key('k2');
    const [old] = await new EncryptionCodec([k1]).encode([payload('before rotation')]);
    const rotated = new EncryptionCodec([k2, k1]);
    expect(defaultPayloadConverter.fromPayload((await rotated.decode([old!]))[0]!)).toBe('before rotation');
    const [fresh] = await rotated.encode([payload('after')]);
    expect(text(fresh!.metadata![KEY_ID_METADATA])).toBe('k2');
  });

  it('names the missing key when a payload was encrypted with a key that is not in the ring', async () => {
    const [old] = await new EncryptionCodec([key('retired')]).encode([payload('x')]);
    await expect(new EncryptionCodec([key('k2')]).decode([old!])).rejects.toThrow(/key "retired", which is not in the key ring \(k2\)/);
  });

  it('refuses tampered data and a payload relabelled to another key', async () => {
    const k1 = key('k1');
    const codec = new EncryptionCodec([k1, { id: 'k0', key: k1.key }]);
    const [enc] = await codec.encode([payload('x')]);
    const flipped = Buffer.from(enc!.data!);
    flipped[20] = flipped[20]! ^ 1;
    await expect(codec.decode([{ ...enc!, data: flipped }])).rejects.toBeInstanceOf(PayloadDecryptError);
    const relabelled = { ...enc!, metadata: { ...enc!.metadata!, [KEY_ID_METADATA]: Buffer.from('k0') } };
    await expect(codec.decode([relabelled])).rejects.toThrow(/failed authentication/);
  });

  it('passes payloads that are not encrypted through (histories from before encryption)', async () => {
    const plain = payload({ a: 1 });
    expect(await new EncryptionCodec([key('k1')]).decode([plain])).toEqual([plain]);
  });
});

describe('parsePayloadKeys', () => {
  const b64 = randomBytes(32).toString('base64');
  it('reads id:key lines, first is current, comments skipped', () => {
    const keys = parsePayloadKeys(`# ring\nnew:${b64}\n\nold:${randomBytes(32).toString('base64')}\n`, 'keys');
    expect(keys.map((k) => k.id)).toEqual(['new', 'old']);
  });
  it.each([
    ['', /no key/],
    [`k1 ${b64}`, /line 1: expected "<id>:<base64 of 32 bytes>"/],
    [`bad id:${b64}`, /line 1: key id "bad id"/],
    [`k1:${randomBytes(16).toString('base64')}`, /exactly 32 bytes \(got 16 bytes\)/],
    [`k1:${b64}\nk1:${b64}`, /line 2: key id "k1" appears twice/],
  ])('refuses %j', (content, message) => {
    expect(() => parsePayloadKeys(content, 'keys')).toThrow(message);
  });
});
