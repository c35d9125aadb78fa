/**
 * The worker's image fetches (probe, checksum file, whole-image download)
 * under its address policy, against real servers on loopback: a refused
 * address is a final, clear ImageUnusable and the planted server behind it
 * sees no request (a literal, a name that resolves there, a redirect hop, the
 * worker's own listener); an address let through works as before.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { addressPolicy, addressPolicyFromEnv, refusal } from '../../clients/images/address-policy';
import { imageDispatcher } from '../../clients/images/http';
import { probeImage } from '../../clients/images/probe';
import { resolveChecksumUrl } from '../../clients/images/checksum-file';
import { downloadVerified } from '../../clients/images/verified-download';
import { ImageError } from '../../clients/images/errors';
import { createImageActivities } from '../../activities/images/activities';
import { imageBytes } from '../support/image-bytes';
import { startImageServer, type ImageServer } from '../support/image-server';

const disk = imageBytes.qcow2();
let planted: ImageServer;
let redirector: Server;
let redirectorUrl: string;

beforeAll(async () => {
  planted = await startImageServer({ '/disk.qcow2': { body: disk }, '/sums': { body: `${createHash('sha256').update(disk).digest('hex')}  disk.qcow2\n`, contentType: 'text/plain' } });
  // Another loopback address: let through on its own, it sends the fetch on to the planted server.
  redirector = createServer((req, res) => res.writeHead(302, { location: planted.url(req.url ?? '/') }).end());
  await new Promise<void>((r) => redirector.listen(0, '127.0.0.2', r));
  redirectorUrl = `http://127.0.0.2:${(redirector.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await planted?.close();
  redirector?.close();
});

async function refusedWith(p: Promise<unknown>): Promise<ImageError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(ImageError);
  return err as ImageError;
}

const port = () => new URL(planted.url('/')).port;

describe('image fetch policy', () => {
  it('by default refuses loopback, link-local and metadata addresses, literal or by name, before any request', async () => {
    const dispatcher = imageDispatcher({ policy: addressPolicy(), timeoutMs: 10_000 });
    const literal = await refusedWith(probeImage(dispatcher, { url: planted.url('/disk.qcow2') }));
    expect(literal.type).toBe('address-refused');
    expect(literal.message).toMatch(/the worker does not connect to 127\.0\.0\.1 port \d+: loopback addresses are refused; METALFLOW_IMAGE_FETCH_ALLOW lists the ranges let through/);
    const byName = await refusedWith(probeImage(dispatcher, { url: `http://localhost:${port()}/disk.qcow2` }));
    expect(byName.type).toBe('address-refused');
    const sums = await refusedWith(resolveChecksumUrl(dispatcher, { url: planted.url('/disk.qcow2'), checksum: planted.url('/sums') }));
    expect(sums.type).toBe('address-refused');
    const whole = await refusedWith(downloadVerified(dispatcher, planted.url('/disk.qcow2'), { algorithm: 'sha256', value: '0'.repeat(64) }));
    expect(whole.type).toBe('address-refused');
    expect(planted.seen).toEqual([]);
    const metadata = await refusedWith(probeImage(dispatcher, { url: 'http://169.254.169.254/latest/meta-data/iam/' }));
    expect(metadata.message).toMatch(/169\.254\.169\.254 port 80: link-local/);
    expect(refusal(addressPolicy(), '::ffff:127.0.0.1')?.message).toMatch(/loopback/);
    expect(refusal(addressPolicy(), 'fd00:ec2::254')?.message).toMatch(/link-local/);
    expect(refusal(addressPolicy(), '10.1.2.3')).toBeUndefined();
    expect(refusal(addressPolicyFromEnv({ METALFLOW_IMAGE_FETCH_DENY: 'private' }), '10.1.2.3')?.message).toMatch(/METALFLOW_IMAGE_FETCH_DENY/);
  });

  it('checks every redirect hop: an allowed server cannot send the fetch on to a refused address', async () => {
    const policy = addressPolicy({ allow: ['127.0.0.2/32'] });
    const dispatcher = imageDispatcher({ policy, timeoutMs: 10_000 });
    expect((await refusedWith(probeImage(dispatcher, { url: `${redirectorUrl}/disk.qcow2` }))).type).toBe('address-refused');
    expect((await refusedWith(downloadVerified(dispatcher, `${redirectorUrl}/disk.qcow2`, { algorithm: 'sha256', value: '0'.repeat(64) }))).type).toBe('address-refused');
    expect(planted.seen).toEqual([]);
  });

  it("refuses the worker's own listeners even where loopback is let through", async () => {
    const policy = addressPolicy({ allow: ['127.0.0.0/8'], ownPorts: [Number(port())] });
    const own = await refusedWith(probeImage(imageDispatcher({ policy, timeoutMs: 10_000 }), { url: planted.url('/disk.qcow2') }));
    expect(own.message).toMatch(/one of the worker's own listeners/);
    expect(planted.seen).toEqual([]);
  });

  it('lets through what METALFLOW_IMAGE_FETCH_ALLOW lists: probe, checksum file and download work; the activity reports a refusal as final', async () => {
    const policy = addressPolicyFromEnv({ METALFLOW_IMAGE_FETCH_ALLOW: '127.0.0.0/8,::1/128' });
    const dispatcher = imageDispatcher({ policy, timeoutMs: 10_000 });
    expect((await probeImage(dispatcher, { url: planted.url('/disk.qcow2'), format: 'qcow2' })).sniffed).toBe('qcow2');
    expect((await resolveChecksumUrl(dispatcher, { url: planted.url('/disk.qcow2'), checksum: planted.url('/sums') })).algorithm).toBe('sha256');
    expect((await downloadVerified(dispatcher, `${redirectorUrl}/disk.qcow2`, { algorithm: 'sha256', value: createHash('sha256').update(disk).digest('hex') })).bytes).toBe(disk.length);
    expect(planted.seen.length).toBeGreaterThan(0);

    const { checkImage } = createImageActivities({ http: { policy: addressPolicy(), timeoutMs: 10_000 } });
    const failure = await checkImage({ image: { url: 'http://169.254.169.254/disk.qcow2', checksum: 'c'.repeat(64) } }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'ImageUnusable', nonRetryable: true, details: [{ type: 'address-refused' }] });
  });

  it('names a bad CIDR in the setting', () => {
    expect(() => addressPolicyFromEnv({ METALFLOW_IMAGE_FETCH_ALLOW: '127.0.0.1' })).toThrow(/METALFLOW_IMAGE_FETCH_ALLOW: "127.0.0.1" is not a CIDR/);
  });
});
