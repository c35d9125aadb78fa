/**
 * Each peer's failures as the failure type a workflow sees, from the
 * activities themselves against real peers: the test stack's sushy-tools
 * (its own error bodies, and 5xx or unreadable successes injected by the
 * fault proxy in front of it), OpenIPMI's ipmi_sim refusing a password, and
 * an image server on loopback answering 404 and 500. A bug in metalflow or
 * a success metalflow cannot read is a final InternalError, never retried as
 * transient.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBmcActivities } from '../../activities/bmc/activities';
import { createImageActivities } from '../../activities/images/activities';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { bmcFailureClass } from '../../clients/bmc/errors';
import { httpError, parseJson } from '../../clients/redfish/http';
import { FAILURE } from '../../model/failures';
import type { HostSpec, Image } from '../../model/host';
import { SUSHY_URL } from '../support/env';
import { IronicProxy } from '../../bench/support/ironic-proxy';
import { unusedPort } from '../support/ports';
import { startImageServer, type ImageServer } from '../support/image-server';
import { TEST_FETCH_POLICY } from '../support/fetch-policy';
import { imageBytes } from '../support/image-bytes';
import { applicationFailure } from '../bmc/support/failure';
import { startHarness } from '../support/harness';
import { activityFailureMapping } from '../../workers/activity-failures';
import { IPMI_PASSWORD, IPMI_USER, startIpmiSim, type IpmiSim } from '../bmc/support/ipmi-sim';

const NS = 'peer-errors';
/** Read only here (no power change): the test stack's first sushy system. */
const SYSTEM = '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000001';
const AUTH = `Basic ${Buffer.from('admin:password').toString('base64')}`;

let dir: string;
let secrets: LocalSecretStore;
let proxy: IronicProxy;
let sim: IpmiSim;
let web: ImageServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'metalflow-peer-errors-'));
  secrets = new LocalSecretStore(dir, randomBytes(32));
  await secrets.write(NS, 'redfish', { username: 'admin', password: 'password' });
  await secrets.write(NS, 'ipmi-wrong', { username: IPMI_USER, password: `wrong-${randomBytes(4).toString('hex')}` });
  await secrets.write(NS, 'ipmi', { username: IPMI_USER, password: IPMI_PASSWORD });
  proxy = new IronicProxy(SUSHY_URL);
  await proxy.start();
  sim = await startIpmiSim(await unusedPort());
  web = await startImageServer({ '/images/disk.qcow2': { body: imageBytes.qcow2(100_000) }, '/images/broken.qcow2': { body: 'upstream failed', status: 500 } });
});
afterAll(async () => {
  await proxy?.stop();
  await sim?.stop();
  await web?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const bmc = () => createBmcActivities({ secrets, timeoutMs: 5_000, powerTimeoutMs: 20_000, pollIntervalMs: 250 });
const target = (address: string, credentialsName: string): { ref: { namespace: string; name: string }; spec: HostSpec } => ({
  ref: { namespace: NS, name: 'h' },
  spec: { bmc: { address, credentialsName }, online: true },
});
const viaProxy = (system = SYSTEM) => target(`redfish+${proxy.url}${system}`, 'redfish');

const failure = applicationFailure;

/** One request straight to the real sushy: its own answer, body and all. */
async function sushy(method: 'GET' | 'POST', path: string, body?: unknown) {
  const res = await request(`${SUSHY_URL}${path}`, {
    method,
    headers: { authorization: AUTH, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: {}, body: parseJson(text), text };
}

describe('Redfish (sushy-tools)', () => {
  it("sushy's own refusals, captured: an unknown system is a final not-found, a reset type it lacks final unsupported", async () => {
    const missing = await sushy('GET', '/redfish/v1/Systems/no-such-system');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ error: { code: expect.stringMatching(/^Base\./), message: expect.any(String) } });
    expect(bmcFailureClass(httpError('GET', SUSHY_URL, missing, 'admin'))).toEqual({ type: FAILURE.operationFailed, retryable: false, details: { kind: 'not-found' } });
    const bogus = await sushy('POST', `${SYSTEM}/Actions/ComputerSystem.Reset`, { ResetType: 'Bogus' });
    expect(bogus.status).toBeGreaterThanOrEqual(400);
    expect(bmcFailureClass(httpError('POST', SUSHY_URL, bogus, 'admin'))).toMatchObject({ type: FAILURE.operationFailed, retryable: false, details: { kind: 'unsupported' } });
    expect(httpError('POST', SUSHY_URL, bogus, 'admin').message).toContain('Bogus');

    // The same 404 through an activity: what the workflow sees.
    const f = await failure(bmc().getBmcPower(viaProxy('/redfish/v1/Systems/no-such-system')));
    expect(f).toMatchObject({ type: FAILURE.operationFailed, nonRetryable: true, details: [{ kind: 'not-found' }] });
  });

  it('a 5xx with a Redfish error body is Transient, retried', async () => {
    const body = JSON.stringify({ error: { code: 'Base.1.0.GeneralError', message: 'the BMC is resetting', '@Message.ExtendedInfo': [{ MessageId: 'Base.1.0.GeneralError' }] } });
    proxy.answerRaw((r) => r.method === 'GET' && r.path === SYSTEM, 1, 503, body);
    const f = await failure(bmc().getBmcPower(viaProxy()));
    expect(f).toMatchObject({ type: FAILURE.transient, nonRetryable: false, details: [{ kind: 'bmc-fault' }] });
    expect(f.message).toContain('the BMC is resetting');
  });

  it('a success that is not JSON, or a system without a PowerState, is a final InternalError (not retried as a BMC fault)', async () => {
    proxy.answerRaw((r) => r.method === 'GET' && r.path === SYSTEM, 1, 200, '<html><body>Please log in</body></html>');
    const html = await failure(bmc().getBmcPower(viaProxy()));
    expect(html).toMatchObject({ type: FAILURE.internal, nonRetryable: true, details: [{ kind: 'bad-answer' }] });
    expect(html.message).toMatch(/HTTP 200 with a body that is not a JSON object \("<html><body>Please log in/);

    const real = await sushy('GET', SYSTEM);
    const { PowerState: _dropped, ...withoutPower } = real.body;
    proxy.answerRaw((r) => r.method === 'GET' && r.path === SYSTEM, 2, 200, JSON.stringify(withoutPower));
    const noPower = await failure(bmc().getBmcPower(viaProxy()));
    expect(noPower).toMatchObject({ type: FAILURE.internal, nonRetryable: true, details: [{ kind: 'bad-answer' }] });
  });

  it('the real sushy behind the proxy still answers (the faults above were the proxy\'s only)', async () => {
    expect((await bmc().getBmcPower(viaProxy())).state).toMatch(/^(on|off)$/);
  });
});

describe('IPMI (ipmi_sim)', () => {
  it('a password the BMC refuses is final (OperationFailed, bad-credentials); nothing listening is Transient', async () => {
    const wrong = await failure(bmc().getBmcPower(target(`ipmi://127.0.0.1:${sim.port}`, 'ipmi-wrong')));
    expect(wrong).toMatchObject({ type: FAILURE.operationFailed, nonRetryable: true, details: [{ kind: 'bad-credentials' }] });
    const nobody = await failure(
      createBmcActivities({ secrets, timeoutMs: 3_000 }).getBmcPower(target(`ipmi://127.0.0.1:${await unusedPort()}`, 'ipmi')),
    );
    expect(nobody).toMatchObject({ type: FAILURE.transient, nonRetryable: false, details: [{ kind: 'unreachable' }] });
    expect((await bmc().getBmcPower(target(`ipmi://127.0.0.1:${sim.port}`, 'ipmi'))).state).toMatch(/^(on|off)$/);
  });
});

describe('images (HTTP server on loopback)', () => {
  const { checkImage } = createImageActivities({ http: { policy: TEST_FETCH_POLICY } });
  const image = (path: string): Image => ({ url: web.url(path), checksum: 'a'.repeat(64), checksumType: 'sha256', format: 'qcow2' });

  it('404 is final ImageUnusable (not-found); 500 is Transient (unavailable), retried', async () => {
    expect(await failure(checkImage({ image: image('/images/gone.qcow2') }))).toMatchObject({
      type: FAILURE.imageUnusable,
      nonRetryable: true,
      details: [{ type: 'not-found' }],
    });
    expect(await failure(checkImage({ image: image('/images/broken.qcow2') }))).toMatchObject({
      type: FAILURE.transient,
      nonRetryable: false,
      details: [{ type: 'unavailable' }],
    });
    expect((await checkImage({ image: image('/images/disk.qcow2') })).summary).toMatch(/qcow2/);
  });

  it('a bug in metalflow (a TypeError) is a final InternalError, not retried', async () => {
    const f = await failure(checkImage({ image: null as unknown as Image }));
    expect(f).toMatchObject({ type: FAILURE.internal, nonRetryable: true });
    expect(f.message).toMatch(/^internal error in metalflow: TypeError: /);
  });
});

describe("the project's worker", () => {
  it('runs every activity through the one conversion (activities without a peer mapping of their own included)', async () => {
    const h = await startHarness({ startWorker: false });
    try {
      expect(h.worker.options.interceptors.activity).toContain(activityFailureMapping);
    } finally {
      await h.close();
    }
  });
});
