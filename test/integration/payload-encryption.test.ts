/**
 * Payload encryption against the real dev server: a host enrolled and
 * provisioned by an encrypting worker and client leaves none of its spec,
 * image URL or host data readable in the raw history; the codec reads it back,
 * also after the key ring is rotated.
 */
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EncryptionCodec, type PayloadKey } from '../../clients/temporal/payload-codec';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import { startHarness, randomMac, uniq, waitFor, type Harness } from '../support/harness';
import { decodedHistoryTexts, findSecrets } from '../../bench/support/history-secrets';
import { createCodecServer } from '../../api/codec-server';
import { TokenFile, tokenHash } from '../../api/auth/token-file';
import { REPO_ROOT } from '../../config/env';
import { TEMPORAL_ADDRESS } from '../support/env';

const NS = 'enc';
const k1: PayloadKey = { id: 'k1', key: randomBytes(32) };
let h: Harness;

const OPERATOR_TOKEN = randomBytes(16).toString('hex');
const NARROW_TOKEN = randomBytes(16).toString('hex');
let codecServer: Server;
let codecUrl: string;

beforeAll(async () => {
  h = await startHarness({ dataConverter: { payloadCodecs: [new EncryptionCodec([k1])] } });
  const tokens = TokenFile.parse(`${tokenHash(OPERATOR_TOKEN)} ops viewer:*\n${tokenHash(NARROW_TOKEN)} lab viewer:lab\n`, 'test tokens');
  codecServer = createCodecServer({ codec: new EncryptionCodec([k1]), tokens, corsOrigins: ['http://127.0.0.1:8233'] });
  await new Promise<void>((r) => codecServer.listen(0, '127.0.0.1', r));
  codecUrl = `http://127.0.0.1:${(codecServer.address() as AddressInfo).port}`;
});
afterAll(async () => {
  codecServer?.close();
  await h?.close();
});

/** `temporal workflow show` through the codec server, as an operator would run it (async: the server runs in this process). */
const show = (workflowId: string, auth?: string): Promise<{ status: number; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    execFile(
      join(REPO_ROOT, '.venv', 'bin', 'temporal'),
      ['workflow', 'show', '--address', TEMPORAL_ADDRESS, '-w', workflowId, '-o', 'json', '--codec-endpoint', codecUrl, ...(auth ? ['--codec-auth', auth] : [])],
      { encoding: 'utf8', timeout: 60_000 },
      (err, stdout, stderr) => resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });

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

  it('shows decoded payloads through the codec server to an operator with a token, and refuses everyone else', async () => {
    const name = uniq('codec');
    const mac = randomMac();
    await h.hosts.put(
      { namespace: NS, name },
      { spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` }, bootMACAddress: mac, online: true }, credentials: { username: 'admin', password: 'pw' } },
    );
    const id = hostWorkflowId({ namespace: NS, name });
    await waitFor('enrolled', async () => (await h.client.workflow.getHandle(id).query(hostViewQuery)).status.provisioning.ID !== '', { timeoutMs: 90_000 });

    const shown = await show(id, `Bearer ${OPERATOR_TOKEN}`);
    expect(shown.status, shown.stderr).toBe(0);
    // JSON output keeps payload data in base64: the codec server turned them back into json/plain, the spec readable.
    const data: string[] = [];
    JSON.stringify(JSON.parse(shown.stdout), (k, v: unknown) => {
      if (k === 'data' && typeof v === 'string') data.push(Buffer.from(v, 'base64').toString('utf8'));
      return v;
    });
    expect(data.join('\n')).toContain(mac);
    expect(shown.stdout).not.toContain(Buffer.from('binary/encrypted').toString('base64'));

    // Anyone else is refused (the CLI only retries on a refusal, so it is asked directly).
    const decode = (auth?: string) =>
      fetch(`${codecUrl}/decode`, { method: 'POST', headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) }, body: JSON.stringify({ payloads: [] }) });
    expect((await decode()).status).toBe(401);
    expect((await decode(`Bearer ${randomBytes(16).toString('hex')}`)).status).toBe(401);
    expect((await decode(`Bearer ${NARROW_TOKEN}`)).status).toBe(403);
    expect((await decode(`Bearer ${OPERATOR_TOKEN}`)).status).toBe(200);

    const preflight = await fetch(`${codecUrl}/decode`, { method: 'OPTIONS', headers: { origin: 'http://127.0.0.1:8233' } });
    expect(preflight.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:8233');
    const foreign = await fetch(`${codecUrl}/decode`, { method: 'POST', headers: { origin: 'http://evil.example' }, body: '{}' });
    expect(foreign.status).toBe(403);
  });
});
