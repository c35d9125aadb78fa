/**
 * The Redfish client against the DMTF public rack-mount server mockup
 * (../shared/redfish-mockups/public-rackmount1, read at test time by
 * support/redfish-mockup.ts, never copied into the project).
 *
 * What this exercises that sushy-tools cannot show (sushy has no
 * SessionService, no ETags, no task monitors, no Memory collection, no BIOS
 * version, serial numbers or IP addresses, virtual media only through
 * actions, and plain HTTP here):
 * - system lookup from the service root path (the mockup has one system);
 * - session auth: POST Sessions → X-Auth-Token on every later request,
 *   DELETE on close, re-login after the session expires, fall back to basic
 *   when sessions are advertised but refused; 401 without credentials;
 * - ETag / If-Match on PATCH, with one refresh-and-retry on 412;
 * - 202 + task monitor for ComputerSystem.Reset, including a failing task;
 * - inventory from real-shaped data: two CPU sockets (one absent) and an
 *   FPGA, four DIMM slots (one absent), physical/virtual/host NICs with IPs
 *   and speeds, SimpleStorage devices (two absent bays), vendor, serial
 *   number, BIOS version, host name;
 * - virtual media without Insert/Eject actions (PATCH on the CD slot, the
 *   floppy/USB slot skipped);
 * - Redfish error bodies with @Message.ExtendedInfo, 405, a BMC that
 *   stops answering, and TLS with a self-signed certificate.
 * Reset semantics (what PowerState follows a reset) are the mockup server's
 * own; the data and the error shapes are the DMTF's.
 */
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openBmc } from '../../clients/bmc/bmc-client';
import { RedfishError, type BmcError } from '../../clients/bmc/errors';
import { RedfishClient, type RedfishClientOptions } from '../../clients/redfish/client';
import { Value } from '@sinclair/typebox/value';
import { HardwareDetailsSchema } from '../../model/host';
import { parseBmcAddress } from '../../model/bmc';
import { selfSignedCert } from '../../bench/support/bmc-files';
import { MOCKUP_SYSTEM, RedfishMockup, type MockupOptions } from './support/redfish-mockup';

const PASSWORD = 'password';

async function failure(p: Promise<unknown>): Promise<BmcError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(RedfishError);
    expect((err as Error).message).not.toContain(`:${PASSWORD}`);
    return err as BmcError;
  }
  throw new Error('expected the call to fail');
}

describe('Redfish client against the DMTF public rack-mount mockup', () => {
  let m: RedfishMockup;
  const start = async (o: MockupOptions = {}) => {
    await m?.close();
    m = await new RedfishMockup({ taskPolls: 2, ...o }).start();
    return m;
  };
  const opts = (path = '/redfish/v1', extra: Partial<RedfishClientOptions> = {}): RedfishClientOptions => ({
    endpoint: { transport: 'http', host: '127.0.0.1', port: m.port, path },
    username: 'admin',
    password: PASSWORD,
    timeoutMs: 5_000,
    taskPollIntervalMs: 20,
    ...extra,
  });
  const connect = (path?: string, extra?: Partial<RedfishClientOptions>) => RedfishClient.connect(opts(path, extra));
  const system = () => m.resource(MOCKUP_SYSTEM)!;

  beforeEach(async () => {
    await start();
  });
  afterEach(async () => {
    await m?.close();
  });

  it('finds the only system from the service root path, over a session it deletes on close', async () => {
    const c = await connect('/redfish/v1/');
    expect(c.systemPath).toBe(MOCKUP_SYSTEM);
    expect(c.authMethod).toBe('session');
    expect(c.serviceRoot.RedfishVersion).toBe('1.15.0');
    expect(await c.getPowerState()).toBe('On');
    expect(m.sessions.size).toBe(1);
    // the service root was read without credentials, the session was created once,
    // and every other request carried the token (never basic auth)
    expect(m.log[0]).toMatchObject({ method: 'GET', path: '/redfish/v1', auth: 'none', status: 200 });
    expect(m.requests('POST', '/SessionService/Sessions')).toHaveLength(1);
    const rest = m.log.filter((r) => r.path !== '/redfish/v1' && r.method !== 'POST');
    expect(rest.length).toBeGreaterThan(0);
    expect(rest.every((r) => r.auth === 'token')).toBe(true);
    await c.close();
    expect(m.sessions.size).toBe(0);
    expect(m.requests('DELETE')).toEqual([expect.objectContaining({ path: expect.stringMatching(/^\/redfish\/v1\/SessionService\/Sessions\/\d+$/), status: 204 })]);
    await c.close(); // twice is fine
  });

  it('also finds the system by its path', async () => {
    const c = await connect(`${MOCKUP_SYSTEM}/`);
    expect(c.systemPath).toBe(MOCKUP_SYSTEM);
    await c.close();
  });

  it('maps the inventory of real-shaped data onto status.hardware', async () => {
    const c = await connect();
    const hw = await c.getInventory();
    await c.close();
    expect([...Value.Errors(HardwareDetailsSchema, hw)].map((e) => `${e.path}: ${e.message}`)).toEqual([]);
    expect(hw).toEqual({
      // CPU1 (8 cores, 16 threads); CPU2 is Absent; the FPGA is not a CPU
      cpu: { arch: 'x86_64', model: 'Multi-Core Intel(R) Xeon(R) processor 7xxx Series', clockMegahertz: 3700, count: 16 },
      // DIMM1-3 of 32 GiB; DIMM4 is Absent
      ramMebibytes: 98304,
      // VLAN1 (virtual, same MAC as NIC 1) is left out
      nics: [
        { name: '12446A3B0411', mac: '12:44:6a:3b:04:11', ip: '192.168.0.10', speedGbps: 1 },
        { name: '12446A3B8890', mac: 'aa:bb:cc:dd:ee:00', ip: '192.168.0.11', speedGbps: 1 },
        { name: 'ToManager', mac: 'aa:bb:cc:dd:ee:fe', ip: '192.168.20.56', speedGbps: 0 },
      ],
      // SimpleStorage (no Storage collection): bays 3 and 4 are Absent
      storage: [
        { name: 'SATA Bay 1', sizeBytes: 8000000000000, model: '3000GT8', vendor: 'Contoso' },
        { name: 'SATA Bay 2', sizeBytes: 4000000000000, model: '3000GT7', vendor: 'Contoso' },
      ],
      systemVendor: { manufacturer: 'Contoso', productName: '3500', serialNumber: '437XR1138R2' },
      firmware: { bios: { version: 'P79 v1.45 (12/06/2017)' } },
      hostname: 'web483',
    });
  });

  it('answers 401 without credentials (but serves the service root), and a wrong password is bad-credentials', async () => {
    const anonymous = await request(`${m.url}${MOCKUP_SYSTEM}`);
    expect(anonymous.statusCode).toBe(401);
    await anonymous.body.dump();
    const root = await request(`${m.url}/redfish/v1/`);
    expect(root.statusCode).toBe(200);
    await root.body.dump();

    const secret = 'Not-The-Password-7';
    const err = await failure(connect('/redfish/v1', { password: secret }));
    expect(err.kind).toBe('bad-credentials');
    expect(err.status).toBe(401);
    expect(err.message).toContain('POST');
    expect(err.message).toContain('rejected the credentials of user "admin"');
    expect(err.message).toContain('credentials included with this request are missing or invalid');
    expect(err.message).not.toContain(secret);
    expect(m.sessions.size).toBe(0);
  });

  it('re-creates an expired session once and repeats the request', async () => {
    const c = await connect();
    m.expireSessions();
    expect(await c.getPowerState()).toBe('On');
    expect(m.requests('POST', '/SessionService/Sessions')).toHaveLength(2);
    expect(m.requests('GET', MOCKUP_SYSTEM).map((r) => r.status).slice(-2)).toEqual([401, 200]);
    await c.close();
  });

  it('falls back to basic auth when sessions are advertised but refused; auth=session insists', async () => {
    await start({ sessions: 'broken' });
    const c = await connect();
    expect(c.authMethod).toBe('basic');
    expect(await c.getPowerState()).toBe('On');
    expect(m.requests('GET', MOCKUP_SYSTEM).every((r) => r.auth === 'basic')).toBe(true);
    await c.close();
    expect(m.requests('DELETE')).toHaveLength(0);

    const err = await failure(connect('/redfish/v1', { auth: 'session' }));
    expect(err.kind).toBe('unsupported');
    expect(err.status).toBe(405);
  });

  it('auth=basic never creates a session', async () => {
    const c = await connect('/redfish/v1', { auth: 'basic' });
    expect(await c.getPowerState()).toBe('On');
    await c.close();
    expect(m.requests('POST')).toHaveLength(0);
    expect(m.requests('GET', MOCKUP_SYSTEM).every((r) => r.auth === 'basic')).toBe(true);
  });

  it('PATCHes with If-Match, and on 412 reads the resource again and retries once', async () => {
    const c = await connect();
    m.concurrentChanges = 1; // someone else changes the system between our read and our write
    await c.setBootOverride({ target: 'Cd', enabled: 'Continuous', mode: 'Legacy' });
    const patches = m.requests('PATCH', MOCKUP_SYSTEM);
    expect(patches.map((p) => p.status)).toEqual([412, 200]);
    expect(patches[0]!.ifMatch).toBeTruthy();
    expect(patches[1]!.ifMatch).toBeTruthy();
    expect(patches[1]!.ifMatch).not.toBe(patches[0]!.ifMatch);
    expect(patches[1]!.body).toEqual({
      Boot: { BootSourceOverrideTarget: 'Cd', BootSourceOverrideEnabled: 'Continuous', BootSourceOverrideMode: 'Legacy' },
    });
    expect(system().Boot).toMatchObject({ BootSourceOverrideTarget: 'Cd', BootSourceOverrideEnabled: 'Continuous', BootSourceOverrideMode: 'Legacy' });
    // the other client's change survived
    expect((system().Oem as Record<string, unknown>).ChangedBy).toMatch(/another client/);
    await c.close();
  });

  it('gives up after a second 412 and says the resource kept changing', async () => {
    const c = await connect();
    m.concurrentChanges = 2;
    const err = await failure(c.setBootOverride({ target: 'Pxe', enabled: 'Once' }));
    expect(err.kind).toBe('bmc-fault');
    expect(err.status).toBe(412);
    expect(err.message).toMatch(/412 twice/);
    expect(m.requests('PATCH').map((p) => p.status)).toEqual([412, 412]);
    expect(system().Boot).toMatchObject({ BootSourceOverrideTarget: 'Pxe', BootSourceOverrideEnabled: 'Once' }); // as in the mockup
    await c.close();
  });

  it('refuses a boot target the system does not list, before sending anything', async () => {
    const c = await connect();
    const err = await failure(c.setBootOverride({ target: 'UefiHttp' }));
    expect(err.kind).toBe('unsupported');
    expect(err.message).toContain('cannot boot from UefiHttp');
    expect(m.requests('PATCH')).toHaveLength(0);
    await c.close();
  });

  it('follows the task monitor of an asynchronous reset until the task completes', async () => {
    await start({ taskPolls: 3 });
    const c = await connect();
    await c.reset('ForceOff');
    // the mockup applies the reset only when the task completes
    expect(system().PowerState).toBe('Off');
    expect(m.requests('POST', 'ComputerSystem.Reset').map((r) => [r.status, r.body])).toEqual([[202, { ResetType: 'ForceOff' }]]);
    expect(m.requests('GET', '/TaskMonitors/').map((r) => r.status)).toEqual([202, 202, 202, 200]);
    await c.close();
  });

  it('a task that ends in Exception is a bmc-fault carrying the task message', async () => {
    const c = await connect();
    m.failNextTask = 'The power supply did not respond';
    const err = await failure(c.reset('ForceOff'));
    expect(err.kind).toBe('bmc-fault');
    expect(err.message).toContain('ended Exception');
    expect(err.message).toContain('The power supply did not respond');
    expect(system().PowerState).toBe('On');
    await c.close();
  });

  it('a task that never finishes ends in a timeout error', async () => {
    await start({ taskPolls: 1_000 });
    const c = await connect('/redfish/v1', { taskTimeoutMs: 300 });
    const err = await failure(c.reset('ForceOff'));
    expect(err.kind).toBe('timeout');
    expect(err.message).toMatch(/task .* still Running/);
    await c.close();
  });

  it('refuses a reset type the system does not allow (PowerCycle), sending nothing', async () => {
    const c = await connect();
    const err = await failure(c.reset('PowerCycle'));
    expect(err.kind).toBe('unsupported');
    expect(err.message).toContain('does not allow ResetType PowerCycle (it allows On, ForceOff, GracefulShutdown, GracefulRestart, ForceRestart, Nmi, ForceOn, PushPowerButton)');
    expect(m.requests('POST', 'ComputerSystem.Reset')).toHaveLength(0);
    await c.close();
  });

  it('reboots through the common BmcClient: ForceOff, wait until off, On (each via a task monitor)', async () => {
    const r = parseBmcAddress(`redfish+http://127.0.0.1:${m.port}${MOCKUP_SYSTEM}`);
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    const bmc = await openBmc(r.value, { username: 'admin', password: PASSWORD }, { redfish: { taskPollIntervalMs: 20 } });
    await bmc.reboot('hard', { pollIntervalMs: 20 });
    expect(m.requests('POST', 'ComputerSystem.Reset').map((x) => (x.body as { ResetType: string }).ResetType)).toEqual(['ForceOff', 'On']);
    expect(await bmc.getPower()).toBe('on');
    await bmc.setBootDevice('pxe', { persistent: true, mode: 'UEFI' });
    expect(system().Boot).toMatchObject({ BootSourceOverrideTarget: 'Pxe', BootSourceOverrideEnabled: 'Continuous', BootSourceOverrideMode: 'UEFI' });
    await bmc.close();
    expect(m.sessions.size).toBe(0);
  });

  it('changes virtual media by PATCH (with If-Match) when the CD slot has no actions', async () => {
    const c = await connect();
    const cd = `${MOCKUP_SYSTEM}/VirtualMedia/CD1`;
    expect(await c.getVirtualMedia()).toMatchObject({ path: cd, via: 'patch', inserted: true, image: 'redfish.dmtf.org/freeImages/freeOS.1.1.iso' });
    const url = 'http://images.example/live.iso';
    await c.insertMedia(url);
    const patches = m.requests('PATCH', '/VirtualMedia/');
    expect(patches.map((p) => [p.path, p.body, p.status])).toEqual([
      [cd, { Image: null, Inserted: false }, 200],
      [cd, { Image: url, Inserted: true, WriteProtected: true }, 200],
    ]);
    expect(patches.every((p) => p.ifMatch)).toBe(true);
    expect(m.resource(cd)).toMatchObject({ Image: url, Inserted: true, WriteProtected: true });
    // the floppy/USB slot was never touched
    expect(m.resource(`${MOCKUP_SYSTEM}/VirtualMedia/Floppy1`)).toMatchObject({ Inserted: true, Image: 'https://www.dmtf.org/freeImages/Sardine.img' });
    await c.ejectMedia();
    expect(m.resource(cd)).toMatchObject({ Image: null, Inserted: false });
    await c.close();
  });

  it('a 5xx with @Message.ExtendedInfo is a bmc-fault carrying the message', async () => {
    const c = await connect();
    m.failNext = {
      method: 'GET',
      pathIncludes: '/Processors',
      status: 500,
      body: { error: { code: 'Base.1.0.GeneralError', message: 'A general error has occurred.', '@Message.ExtendedInfo': [{ MessageId: 'Base.1.0.InternalError', Message: 'The BMC sensor subsystem is restarting.' }] } },
    };
    const err = await failure(c.getInventory());
    expect(err.kind).toBe('bmc-fault');
    expect(err.status).toBe(500);
    expect(err.message).toContain('/Processors');
    expect(err.message).toContain('Base.1.0.InternalError: The BMC sensor subsystem is restarting.');
    expect(err.retryable).toBe(true);
    await c.close();
  });

  it('405 on an action is unsupported', async () => {
    const c = await connect();
    m.failNext = { method: 'POST', pathIncludes: 'ComputerSystem.Reset', status: 405, body: {} };
    const err = await failure(c.reset('On'));
    expect(err.kind).toBe('unsupported');
    expect(err.status).toBe(405);
    expect(err.retryable).toBe(false);
    await c.close();
  });

  it('a BMC that stops answering is unreachable once the timeout passes', async () => {
    m.hang = true;
    const started = Date.now();
    const err = await failure(connect('/redfish/v1', { timeoutMs: 500 }));
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(err.kind).toBe('unreachable');
    expect(err.message).toContain('no response within 500 ms (timeout)');
  });

  it('a host name that does not resolve is unreachable and says DNS', async () => {
    const err = await failure(RedfishClient.connect({ ...opts(), endpoint: { transport: 'http', host: 'bmc.invalid', path: MOCKUP_SYSTEM } }));
    expect(err.kind).toBe('unreachable');
    expect(err.message).toContain('DNS lookup of the BMC host failed');
  });
});

describe('Redfish over HTTPS with a self-signed certificate (mockup)', () => {
  let m: RedfishMockup;
  let tls: { key: string; cert: string };
  beforeAll(async () => {
    tls = selfSignedCert();
    m = await new RedfishMockup({ tls }).start();
  });
  afterAll(async () => {
    await m?.close();
  });
  const opts = (extra: Partial<RedfishClientOptions> = {}): RedfishClientOptions => ({
    endpoint: { transport: 'https', host: '127.0.0.1', port: m.port, path: MOCKUP_SYSTEM },
    username: 'admin',
    password: PASSWORD,
    timeoutMs: 5_000,
    ...extra,
  });

  it('verifies the certificate by default: a tls error that names the problem', async () => {
    const err = await failure(RedfishClient.connect(opts()));
    expect(err.kind).toBe('tls');
    expect(err.message).toContain('self-signed certificate');
    expect(err.message).toContain('disableCertificateVerification');
    expect(m.sessions.size).toBe(0);
  });

  it('disableCertificateVerification skips verification', async () => {
    const c = await RedfishClient.connect(opts({ disableCertificateVerification: true }));
    expect(await c.getPowerState()).toBeTruthy();
    await c.close();
  });

  it('a CA given for the BMC is trusted with verification on', async () => {
    const c = await RedfishClient.connect(opts({ ca: tls.cert }));
    expect(c.systemPath).toBe(MOCKUP_SYSTEM);
    await c.close();
  });
});
