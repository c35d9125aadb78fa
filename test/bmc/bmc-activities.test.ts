/**
 * The BMC activities (activities/bmc/activities.ts) as the workflows call
 * them, with credentials read from the secret store, against real BMCs:
 * sushy-tools (the test stack's Redfish emulator, fake systems, power changes
 * land 1-11 s after the request) and OpenIPMI's ipmi_sim with a
 * chassis_control program that keeps power state in files we can read.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { createBmcActivities } from '../../activities/bmc/activities';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { RedfishClient } from '../../clients/redfish/client';
import type { HostSpec } from '../../model/host';
import { SUSHY_URL, TEST_PORTS } from '../support/env';
import { serveFiles, tinyIso, type FileServer } from '../../bench/support/bmc-files';
import { unusedPort } from '../support/ports';
import { IPMI_PASSWORD, IPMI_USER, startIpmiSim, type IpmiSim } from './support/ipmi-sim';

const NS = 'bmc-activities';
/** The test stack's sushy system no other test file drives the power of. */
const SYSTEM = '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000001';
const SIM_PORT = 22633;
const WRONG = `wrong-${randomBytes(6).toString('hex')}`;

let dir: string;
let secrets: LocalSecretStore;
let sim: IpmiSim;
let iso: FileServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'metalflow-bmc-act-'));
  secrets = new LocalSecretStore(dir, randomBytes(32));
  await secrets.write(NS, 'redfish', { username: 'admin', password: 'password' });
  await secrets.write(NS, 'ipmi', { username: IPMI_USER, password: IPMI_PASSWORD });
  await secrets.write(NS, 'wrong', { username: 'admin', password: WRONG });
  sim = await startIpmiSim(SIM_PORT);
  iso = await serveFiles({ 'live.iso': tinyIso() });
});
afterAll(async () => {
  await sim?.stop();
  await iso?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const act = (over: Partial<Parameters<typeof createBmcActivities>[0]> = {}) =>
  createBmcActivities({ secrets, timeoutMs: 5_000, powerTimeoutMs: 40_000, pollIntervalMs: 250, ...over });

const target = (address: string, credentialsName: string): { ref: { namespace: string; name: string }; spec: HostSpec } => ({
  ref: { namespace: NS, name: 'h' },
  spec: { bmc: { address, credentialsName }, online: true },
});

const redfish = (creds = 'redfish') => target(`redfish+${SUSHY_URL}${SYSTEM}`, creds);
const ipmi = (creds = 'ipmi', port = SIM_PORT) => target(`ipmi://127.0.0.1:${port}`, creds);

async function failure(p: Promise<unknown>): Promise<ApplicationFailure> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ApplicationFailure);
    return err as ApplicationFailure;
  }
  throw new Error('expected the activity to fail');
}

const sets = () => sim.calls().filter((c) => c.startsWith('set '));

describe('BMC activities against sushy-tools (Redfish)', () => {
  it('powers on and off, and a repeated call sends nothing (level-triggered)', async () => {
    const a = act();
    const on = await a.setBmcPower({ ...redfish(), on: true });
    expect(on).toEqual({ poweredOn: true, state: 'on' });
    expect(await a.getBmcPower(redfish())).toEqual({ poweredOn: true, state: 'on' });
    // Already on: answered from one read, no reset (sushy would take 1-11 s for one).
    const started = Date.now();
    expect(await a.setBmcPower({ ...redfish(), on: true })).toEqual({ poweredOn: true, state: 'on' });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await a.setBmcPower({ ...redfish(), on: false, mode: 'hard' })).toEqual({ poweredOn: false, state: 'off' });
    expect(await a.setBmcPower({ ...redfish(), on: false })).toEqual({ poweredOn: false, state: 'off' });
  });

  it('soft power off asks the OS (GracefulShutdown) and reaches off', async () => {
    const a = act();
    await a.setBmcPower({ ...redfish(), on: true });
    expect(await a.setBmcPower({ ...redfish(), on: false, mode: 'soft' })).toEqual({ poweredOn: false, state: 'off' });
  });

  it('reads the inventory out of band in the host model', async () => {
    const { hardware } = await act().inspectBmc(redfish());
    expect(hardware.cpu?.count).toBeGreaterThan(0);
    expect(hardware.ramMebibytes).toBeGreaterThan(0);
    expect(hardware.nics?.length).toBeGreaterThan(0);
  });

  it('sets the boot device and inserts / ejects virtual media, each twice without harm', async () => {
    const a = act();
    await a.setBmcBootDevice({ ...redfish(), device: 'cdrom', mode: 'UEFI' });
    await a.setBmcBootDevice({ ...redfish(), device: 'cdrom', mode: 'UEFI' });
    await a.insertBmcMedia({ ...redfish(), imageUrl: iso.url('live.iso') });
    const hits = iso.hits('/live.iso');
    await a.insertBmcMedia({ ...redfish(), imageUrl: iso.url('live.iso') });
    expect(iso.hits('/live.iso')).toBe(hits); // already inserted: nothing sent
    const c = await RedfishClient.connect({
      endpoint: { transport: 'http', host: '127.0.0.1', port: TEST_PORTS.sushy, path: SYSTEM },
      username: 'admin',
      password: 'password',
    });
    try {
      expect(((await c.getSystem()).Boot as Record<string, unknown>).BootSourceOverrideTarget).toBe('Cd');
      expect((await c.getVirtualMedia()).inserted).toBe(true);
      await a.ejectBmcMedia(redfish());
      await a.ejectBmcMedia(redfish());
      expect((await c.getVirtualMedia()).inserted).toBe(false);
    } finally {
      await c.close();
    }
  });

  it('a wrong password fails at once (not retryable), naming the cause and never the password', async () => {
    const err = await failure(act().getBmcPower(redfish('wrong')));
    expect(err.nonRetryable).toBe(true);
    expect(err.type).toBe('OperationFailed');
    expect(err.message).toMatch(/401.*rejected the credentials of user "admin"/);
    expect(err.message).not.toContain(WRONG);
    expect(JSON.stringify(err.details)).not.toContain(WRONG);
  });

  it('an unreachable BMC is retryable and says connection refused', async () => {
    const port = await unusedPort();
    const err = await failure(act().setBmcPower({ ...target(`redfish+http://127.0.0.1:${port}${SYSTEM}`, 'wrong'), on: true }));
    expect(err.nonRetryable).toBe(false);
    expect(err.type).toBe('Transient');
    expect(err.message).toContain('connection refused');
    expect(err.message).not.toContain(WRONG);
  });

  it('a missing credentials Secret is named', async () => {
    const err = await failure(act().getBmcPower(redfish('nope')));
    expect(err.message).toBe(`Secret ${NS}/nope not found`);
  });
});

describe('BMC activities against ipmi_sim (IPMI)', () => {
  it('powers on once: a repeated call reads the state and sends nothing', async () => {
    sim.setPowerFile('0');
    sim.clearCalls();
    const a = act();
    expect(await a.setBmcPower({ ...ipmi(), on: true })).toEqual({ poweredOn: true, state: 'on' });
    expect(await a.setBmcPower({ ...ipmi(), on: true })).toEqual({ poweredOn: true, state: 'on' });
    expect(sets()).toEqual(['set power 1']);
    expect(await a.getBmcPower(ipmi())).toEqual({ poweredOn: true, state: 'on' });
  });

  it('soft off: the OS shuts down by itself, no hard off is sent', async () => {
    sim.setPowerFile('1');
    sim.setSoftDelay('1');
    sim.clearCalls();
    expect(await act().setBmcPower({ ...ipmi(), on: false, mode: 'soft', softTimeoutMs: 10_000 })).toEqual({ poweredOn: false, state: 'off' });
    expect(sets()).toEqual(['set shutdown 1']);
  });

  it('soft off that the OS ignores falls back to a hard off after the soft timeout', async () => {
    sim.setPowerFile('1');
    sim.setSoftDelay('ignore');
    sim.clearCalls();
    try {
      expect(await act().setBmcPower({ ...ipmi(), on: false, mode: 'soft', softTimeoutMs: 2_000 })).toEqual({ poweredOn: false, state: 'off' });
      expect(sets()).toEqual(['set shutdown 1', 'set power 0']);
    } finally {
      sim.setSoftDelay('0');
    }
  });

  it('a wrong password fails at once, never showing the password', async () => {
    const err = await failure(act().setBmcPower({ ...ipmi('wrong'), on: true }));
    expect(err.nonRetryable).toBe(true);
    expect(err.message).toMatch(/wrong password|credentials/i);
    expect(err.message).not.toContain(WRONG);
    expect(JSON.stringify(err.details)).not.toContain(WRONG);
  });

  it('a BMC that does not answer is retryable (unreachable), never showing the password', async () => {
    const port = await unusedPort();
    const err = await failure(act({ timeoutMs: 3_000 }).getBmcPower(ipmi('wrong', port)));
    expect(err.nonRetryable).toBe(false);
    expect(err.type).toBe('Transient');
    expect(err.message).toContain(`127.0.0.1:${port}`);
    expect(err.message).not.toContain(WRONG);
  });

  it('has no out-of-band inventory or virtual media: a clear, final error', async () => {
    const inspect = await failure(act().inspectBmc(ipmi()));
    expect(inspect.nonRetryable).toBe(true);
    expect(inspect.message).toMatch(/speaks ipmi, which has no out-of-band inventory; use a Redfish address or agent inspection/);
    const media = await failure(act().insertBmcMedia({ ...ipmi(), imageUrl: iso.url('live.iso') }));
    expect(media.message).toMatch(/no virtual media/);
    await act().ejectBmcMedia(ipmi()); // nothing to eject: not an error
  });

  it('sets the boot device', async () => {
    await act().setBmcBootDevice({ ...ipmi(), device: 'pxe', mode: 'UEFI' });
    expect(sim.file('boot')).toBe('pxe');
  });
});
