/**
 * Payload encryption against the real dev server: a host enrolled and
 * provisioned by an encrypting worker and client leaves none of its spec,
 * image URL or host data readable in the raw history; the codec reads it back,
 * also after the key ring is rotated.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EncryptionCodec, type PayloadKey } from '../../clients/temporal/payload-codec';
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery, type HostView } from '../../workflows/definitions';
import { startHarness, randomMac, uniq, waitFor, type Harness } from '../support/harness';
import { decodedHistoryTexts, findSecrets } from '../support/history-secrets';

const NS = 'enc';
const k1: PayloadKey = { id: 'k1', key: randomBytes(32) };
let h: Harness;

beforeAll(async () => {
  h = await startHarness({ dataConverter: { payloadCodecs: [new EncryptionCodec([k1])] } });
});
afterAll(async () => h?.close());

describe('payload encryption', () => {
  it('keeps spec, image URL and results out of the raw history; the codec (old key after rotation) reads them', async () => {
    const name = uniq('enc');
    const mac = randomMac();
    const imageUrl = `http://127.0.0.1/images/${name}.qcow2?X-Amz-Signature=${randomBytes(8).toString('hex')}`;
    await h.hosts.put(
      { namespace: NS, name },
      { spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` }, bootMACAddress: mac, online: true }, credentials: { username: 'admin', password: 'pw' } },
    );
    const handle = h.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name }));
    await waitFor('available', async () => (await handle.query(hostViewQuery)).status.provisioning.state === 'available', { timeoutMs: 90_000 });
    await h.hosts.setImage({ namespace: NS, name }, { url: imageUrl, checksum: 'c'.repeat(32), checksumType: 'md5', format: 'qcow2' });
    const view: HostView = await waitFor(
      'provisioned',
      async () => {
        const v = await handle.query(hostViewQuery);
        return v.status.provisioning.state === 'provisioned' ? v : undefined;
      },
      { timeoutMs: 90_000 },
    );
    expect(view.status.provisioning.image?.url).toBe(imageUrl);

    const plaintext = [imageUrl, mac, `fake://${name}`, view.status.provisioning.ID];
    // Read without the codec: every payload is sealed.
    const raw = await decodedHistoryTexts(h.client, handle.workflowId);
    expect(raw.some((t) => t.text === 'binary/encrypted')).toBe(true);
    expect(findSecrets(raw, plaintext)).toEqual([]);

    // With the codec, after rotation (new key first, old key kept): everything reads back.
    const rotated = new EncryptionCodec([{ id: 'k2', key: randomBytes(32) }, k1]);
    const decoded = await decodedHistoryTexts(h.client, handle.workflowId, { codecs: [rotated] });
    expect(findSecrets(decoded, [imageUrl, mac]).length).toBeGreaterThan(0);

    // A ring without the old key names it.
    const withoutOld = new EncryptionCodec([{ id: 'k2', key: randomBytes(32) }]);
    await expect(decodedHistoryTexts(h.client, handle.workflowId, { codecs: [withoutOld] })).rejects.toThrow(/key "k1", which is not in the key ring/);
  });
});
