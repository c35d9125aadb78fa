/**
 * The image is checked before a deploy (patch image-probe, host option
 * probeImages), against real HTTP(S) servers on loopback and the real Ironic
 * of the test stack, the worker's Ironic traffic recorded by the proxy: a
 * 404, a wrong format, an HTML login page and an untrusted certificate stop
 * the host in `available` with a provisioning error and no deploy sent; a
 * checksum-file URL is resolved and Ironic gets the hash itself; a fixed
 * image goes on at once, although the error backoff is ten minutes.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostSpec, Image } from '../../model/host';
import type { HostView } from '../../contracts/host';
import { isDeploy, type IronicProxy } from '../../bench/support/ironic-proxy';
import { randomMac, uniq, waitFor, type Harness } from '../support/harness';
import { useProxiedHarness } from '../support/proxied-harness';
import { makePki } from '../support/certs';
import { imageBytes } from '../support/image-bytes';
import { startImageServer, type ImageServer } from '../support/image-server';

const NS = 'images';
// A backoff far longer than the test: a fixed image that goes on did not wait it out.
const suite = useProxiedHarness({ hostOptions: { errorBackoffSeconds: 600, maxErrorBackoffSeconds: 600, probeImages: true } });
let h: Harness;
let proxy: IronicProxy;
let web: ImageServer;
let tlsWeb: ImageServer;

const QCOW2 = imageBytes.qcow2(200_000);
const RAW = imageBytes.raw(100_000);
const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const SECRET = 'X-Amz-Signature=s3cr3t-signature';

beforeAll(async () => {
  ({ h, proxy } = suite);
  web = await startImageServer({
    '/images/disk.qcow2': { body: QCOW2 },
    '/images/disk.raw': { body: RAW, refuseHead: true },
    '/images/login': { body: imageBytes.html(), contentType: 'text/html; charset=utf-8' },
    '/images/SHA256SUMS': { body: `${sha256(RAW)}  disk.raw\n${sha256(QCOW2)} *disk.qcow2\n`, contentType: 'text/plain' },
    '/images/OTHERSUMS': { body: `${'a'.repeat(64)}  ubuntu.qcow2\n${'b'.repeat(64)}  ubuntu.iso\n`, contentType: 'text/plain' },
  });
  const pki = makePki({ 'image-server': 'server' });
  tlsWeb = await startImageServer({ '/images/disk.qcow2': { body: QCOW2 } }, { cert: readFileSync(pki.crt('image-server')), key: readFileSync(pki.key('image-server')) });
});

afterAll(async () => {
  await web?.close();
  await tlsWeb?.close();
});

const settle = <T>(what: string, probe: () => Promise<T | undefined | false>) => waitFor(what, probe, { timeoutMs: 240_000, intervalMs: 500 });
const view = async (ref: { namespace: string; name: string }): Promise<HostView> => (await h.hosts.get(ref)) as HostView;
const inline = (over: Partial<Image> = {}): Image => ({ url: web.url('/images/disk.qcow2'), checksum: sha256(QCOW2), checksumType: 'sha256', format: 'qcow2', ...over });

async function availableHost(): Promise<{ ref: { namespace: string; name: string }; nodeId: string }> {
  const ref = { namespace: NS, name: uniq('img') };
  const spec: HostSpec = { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true };
  await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
  const v = await settle(`${ref.name} available`, async () => {
    const got = await view(ref);
    return got.status.provisioning.state === 'available' && !got.currentOperation ? got : undefined;
  });
  return { ref, nodeId: v.status.provisioning.ID };
}

/** The host's image check failed: still available, a provisioning error, and nothing about a deploy sent to Ironic. */
async function refused(ref: { namespace: string; name: string }, nodeId: string): Promise<string> {
  const v = await settle(`${ref.name}: the image check fails`, async () => {
    const got = await view(ref);
    return got.status.errorMessage?.startsWith('image check failed') ? got : undefined;
  });
  expect(v.status.provisioning.state).toBe('available');
  expect(v.status.errorType).toBe('provisioning error');
  expect(v.status.operationalStatus).toBe('error');
  expect(v.operations.filter((o) => o.kind === 'provision')).toEqual([]);
  const node = await h.ironic.getNode(nodeId);
  // As prepare left it (patch bmo-cleaning-placement): not even cleaned for the deploy.
  expect(node?.provision_state).toBe('manageable');
  expect(node?.instance_info?.image_source).toBeUndefined();
  expect(proxy.requests.filter((r) => r.path.includes(nodeId) && (isDeploy(r) || r.body.includes('instance_info')))).toEqual([]);
  expect(v.status.errorMessage).not.toContain('s3cr3t');
  return v.status.errorMessage ?? '';
}

async function provisioned(ref: { namespace: string; name: string }, nodeId: string) {
  await settle(`${ref.name} provisioned`, async () => (await view(ref)).status.provisioning.state === 'provisioned');
  const node = await h.ironic.getNode(nodeId);
  return node?.instance_info ?? {};
}

describe('the image check before a deploy', { timeout: 600_000 }, () => {
  it('stops each unusable image before Ironic is asked, and a fixed image goes on at once', async () => {
    const [missing, mismatch, login, tls, noLine] = await Promise.all([availableHost(), availableHost(), availableHost(), availableHost(), availableHost()]);
    await h.hosts.setImage(missing.ref, inline({ url: `${web.url('/images/missing.qcow2')}?${SECRET}` }));
    await h.hosts.setImage(mismatch.ref, inline({ format: 'raw' }));
    await h.hosts.setImage(login.ref, inline({ url: web.url('/images/login') }));
    await h.hosts.setImage(tls.ref, inline({ url: tlsWeb.url('/images/disk.qcow2') }));
    await h.hosts.setImage(noLine.ref, inline({ checksum: web.url('/images/OTHERSUMS'), checksumType: 'auto' }));

    expect(await refused(missing.ref, missing.nodeId)).toBe('image check failed: the image at 127.0.0.1:' + new URL(web.url('/')).port + ' (…/missing.qcow2): HTTP 404, no such file');
    expect(await refused(mismatch.ref, mismatch.nodeId)).toMatch(/\(…\/disk\.qcow2\): spec\.image\.format is raw, but the image's first bytes are a qcow2 image$/);
    expect(await refused(login.ref, login.nodeId)).toMatch(/\(…\/login\) is an HTML page \(text\/html; charset=utf-8\), not an image/);
    expect(await refused(tls.ref, tls.nodeId)).toMatch(/TLS failed: .*certificate is not signed by a CA the worker trusts/);
    expect(await refused(noLine.ref, noLine.nodeId)).toMatch(/the checksum file at 127\.0\.0\.1:\d+ \(…\/OTHERSUMS\) has no line for the image's file name disk\.qcow2 \(it lists 2 files\)$/);

    // Fixed specs go on from the error at once (the backoff is 600 s): a checksum-file URL is resolved
    // and Ironic gets the hash itself; a raw image whose server refuses HEAD is probed by its ranged GET.
    await h.hosts.setImage(missing.ref, inline({ checksum: web.url('/images/SHA256SUMS'), checksumType: 'auto' }));
    await h.hosts.setImage(mismatch.ref, inline({ url: web.url('/images/disk.raw'), checksum: web.url('/images/SHA256SUMS'), checksumType: 'sha256', format: 'raw' }));
    const resolved = await provisioned(missing.ref, missing.nodeId);
    expect(resolved).toMatchObject({ image_source: web.url('/images/disk.qcow2'), image_os_hash_algo: 'sha256', image_os_hash_value: sha256(QCOW2), image_disk_format: 'qcow2' });
    expect(resolved.image_checksum).toBeUndefined();
    expect(await provisioned(mismatch.ref, mismatch.nodeId)).toMatchObject({ image_os_hash_algo: 'sha256', image_os_hash_value: sha256(RAW), image_disk_format: 'raw' });
    expect(web.seen).toContain('HEAD /images/disk.raw');
    expect(web.seen).toContain('GET /images/disk.raw');
    // The status keeps the image as the spec gave it (the checksum-file URL).
    expect((await view(missing.ref)).status.provisioning.image?.checksum).toBe(web.url('/images/SHA256SUMS'));

    await Promise.all([missing, mismatch, login, tls, noLine].map(({ ref }) => h.hosts.remove(ref)));
  });
});
