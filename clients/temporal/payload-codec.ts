/**
 * Encrypts every payload metalflow sends to Temporal (specs, image URLs —
 * pre-signed ones are credentials —, inventories, error texts), so the
 * server and its database hold none of them in the clear. AES-256-GCM from
 * node:crypto; the whole Payload (metadata and data) is sealed, and the key id
 * travels in the new payload's metadata so keys can rotate: the first key of
 * the ring encrypts, every key decrypts. Payloads that are not encrypted pass
 * through unchanged (histories recorded before encryption was turned on still
 * replay and still read).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
// A CommonJS package: under Node's ESM loader only its default export is there.
import proto from '@temporalio/proto';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';

export interface PayloadKey {
  id: string;
  /** 32 bytes. */
  key: Buffer;
}

/** A payload this codec cannot open: unknown key id, or tampered / truncated data. */
export class PayloadDecryptError extends Error {
  readonly type = 'PayloadDecryptError';
}

const { Payload: PayloadProto } = proto.temporal.api.common.v1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const text = (b: Uint8Array | null | undefined): string | undefined => (b ? Buffer.from(b).toString('utf8') : undefined);

export class EncryptionCodec implements PayloadCodec {
  private readonly byId: Map<string, Buffer>;
  private readonly current: PayloadKey;

  /** `keys[0]` encrypts; all of them decrypt. */
  constructor(keys: readonly PayloadKey[]) {
    if (keys.length === 0) throw new Error('the payload key ring is empty');
    for (const k of keys) if (k.key.length !== 32) throw new Error(`payload key ${k.id}: ${k.key.length} bytes, AES-256 needs 32`);
    this.current = keys[0]!;
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
      // The key id is authenticated too: a payload relabelled to another key fails.
      cipher.setAAD(Buffer.from(this.current.id));
      const plain = PayloadProto.encode(p).finish();
      const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: { encoding: Buffer.from(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: Buffer.from(this.current.id) },
        data: sealed,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      if (text(p.metadata?.encoding) !== ENCRYPTED_ENCODING) return p;
      const id = text(p.metadata?.[KEY_ID_METADATA]) ?? '';
      const key = this.byId.get(id);
      if (!key) {
        throw new PayloadDecryptError(
          `payload encrypted with key "${id}", which is not in the key ring (${[...this.byId.keys()].join(', ')}); add it to METALFLOW_PAYLOAD_KEYS_FILE`,
        );
      }
      const data = Buffer.from(p.data ?? new Uint8Array());
      if (data.length < IV_BYTES + TAG_BYTES) throw new PayloadDecryptError(`encrypted payload of ${data.length} bytes is truncated`);
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(id));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      let plain: Buffer;
      try {
        plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
      } catch {
        throw new PayloadDecryptError(`encrypted payload (key "${id}") failed authentication: tampered or the wrong key`);
      }
      return PayloadProto.decode(plain);
    });
  }
}
