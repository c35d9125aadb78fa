/**
 * The Redfish client against a real Redfish service: sushy-tools'
 * sushy-emulator with its fake systems driver (scripts/sushy_emulator.py,
 * started through scripts/stack.sh on 127.0.0.1:22800 with a state folder of
 * its own), HTTP basic auth admin/password.
 *
 * sushy-tools has no SessionService, no ETags and no task monitors, applies
 * power changes after a delay, ignores BootSourceOverrideEnabled and has no
 * BIOS version, serial numbers or Memory collection: those paths are tested
 * against the DMTF mockup (redfish-mockup.test.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../config/env';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBmc, checkBmc } from '../../clients/bmc/bmc-client';
import { RedfishClient, type RedfishClientOptions } from '../../clients/redfish/client';
import { Value } from '@sinclair/typebox/value';
import { HardwareDetailsSchema } from '../../model/host';
import { parseBmcAddress, type BmcAccess } from '../../model/bmc';
import { redfishFailure } from './support/failure';
import { serveFiles, tinyIso, type FileServer } from '../../bench/support/bmc-files';
import { unusedPort } from '../support/ports';
import { SUSHY_PASSWORD, SUSHY_PORT, SUSHY_SYSTEMS, SUSHY_URL, SUSHY_USER, startSushy, stopSushy } from './support/sushy';

function access(address: string): BmcAccess {
  const r = parseBmcAddress(address);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value;
}

const opts = (system: string, extra: Partial<RedfishClientOptions> = {}): RedfishClientOptions => ({
  endpoint: { transport: 'http', host: '127.0.0.1', port: SUSHY_PORT, path: system },
  username: SUSHY_USER,
  password: SUSHY_PASSWORD,
  timeoutMs: 10_000,
  ...extra,
});

const failure = redfishFailure;

const wait = { timeoutMs: 20_000, pollIntervalMs: 200 };

describe('Redfish client against sushy-tools', () => {
  let iso: FileServer;

  beforeAll(async () => {
    startSushy();
    iso = await serveFiles({ 'tiny.iso': tinyIso() });
  });
  afterAll(async () => {
    await iso?.close();
    stopSushy();
  });

  it('discovers the service, uses basic auth (no SessionService) and finds the system of the address', async () => {
    const c = await RedfishClient.connect(opts(SUSHY_SYSTEMS.bm01));
    try {
      expect(c.origin).toBe(SUSHY_URL);
      expect(c.systemPath).toBe(SUSHY_SYSTEMS.bm01);
      expect(c.authMethod).toBe('basic');
      expect((await c.getSystem()).Name).toBe('mf-bm-01');
    } finally {
      await c.close();
    }
  });

  it('powers on, off and reboots, honouring the allowed reset types', async () => {
    const c = await RedfishClient.connect(opts(SUSHY_SYSTEMS.bm01));
    try {
      expect(await c.allowedResetTypes()).toEqual(['On', 'ForceOff', 'GracefulShutdown', 'GracefulRestart', 'ForceRestart', 'Nmi', 'ForceOn']);
      await c.reset('ForceOff').catch(() => undefined); // whatever state a previous run left
      await c.waitForPowerState('Off', wait);
      await c.reset('On');
      await c.waitForPowerState('On', wait);
      expect(await c.getPowerState()).toBe('On');
      await c.reset('ForceRestart');
      await c.waitForPowerState('On', wait);
      await c.reset('GracefulShutdown');
      await c.waitForPowerState('Off', wait);
      expect(await c.getPowerState()).toBe('Off');
      // PowerCycle is not in sushy's AllowableValues: refused before anything is sent
      const err = await failure(c.reset('PowerCycle'));
      expect(err.kind).toBe('unsupported');
      expect(err.message).toContain('does not allow ResetType PowerCycle');
      expect(err.message).toContain('ForceRestart');
    } finally {
      await c.close();
    }
  });

  it('sets the boot source override (target and mode; sushy ignores Once/Continuous)', async () => {
    const c = await RedfishClient.connect(opts(SUSHY_SYSTEMS.bm01));
    try {
      await c.setBootOverride({ target: 'Pxe', enabled: 'Once', mode: 'UEFI' });
      let boot = (await c.getSystem()).Boot as Record<string, unknown>;
      expect(boot.BootSourceOverrideTarget).toBe('Pxe');
      expect(boot.BootSourceOverrideMode).toBe('UEFI');
      await c.setBootOverride({ target: 'Cd', enabled: 'Continuous', mode: 'Legacy' });
      boot = (await c.getSystem()).Boot as Record<string, unknown>;
      expect(boot.BootSourceOverrideTarget).toBe('Cd');
      expect(boot.BootSourceOverrideMode).toBe('Legacy');
      await c.setBootOverride({ target: 'Hdd', mode: 'UEFI' });
      boot = (await c.getSystem()).Boot as Record<string, unknown>;
      expect(boot.BootSourceOverrideTarget).toBe('Hdd');
      expect(boot.BootSourceOverrideMode).toBe('UEFI');
    } finally {
      await c.close();
    }
  });

  it('reads the inventory (processors, memory summary, NICs, storage drives, vendor)', async () => {
    const c = await RedfishClient.connect(opts(SUSHY_SYSTEMS.bm02));
    try {
      const hw = await c.getInventory();
      expect([...Value.Errors(HardwareDetailsSchema, hw)].map((e) => `${e.path}: ${e.message}`)).toEqual([]);
      expect(hw.cpu).toEqual({ arch: 'x86_64', model: 'Intel(R) Xeon(R) Silver 4210 CPU @ 2.20GHz', count: 40 });
      expect(hw.ramMebibytes).toBe(65536); // sushy has no Memory collection: MemorySummary 64 GiB
      expect(hw.nics).toEqual([
        { name: '52:54:00:6d:66:21', mac: '52:54:00:6d:66:21' },
        { name: '52:54:00:6d:66:22', mac: '52:54:00:6d:66:22' },
      ]);
      expect(hw.storage).toHaveLength(1);
      expect(hw.storage![0]).toMatchObject({ name: 'sda', sizeBytes: 960197124096, rotational: true, type: 'HDD', vendor: 'Contoso' });
      expect(hw.systemVendor).toEqual({ manufacturer: 'Sushy Emulator' });
      expect(hw.firmware).toBeUndefined(); // sushy reports no BiosVersion
    } finally {
      await c.close();
    }
  });

  it('inserts and ejects virtual media on the CD slot (sushy downloads the ISO)', async () => {
    const c = await RedfishClient.connect(opts(SUSHY_SYSTEMS.bm03));
    try {
      await c.ejectMedia();
      const before = iso.hits('/tiny.iso');
      const url = iso.url('tiny.iso');
      await c.insertMedia(url);
      expect(iso.hits('/tiny.iso')).toBeGreaterThan(before);
      let slot = await c.getVirtualMedia();
      expect(slot).toMatchObject({ id: 'Cd', image: url, inserted: true, via: 'actions' });
      expect(slot.mediaTypes).toContain('CD');
      await c.insertMedia(url); // same image: nothing to do
      await c.ejectMedia();
      slot = await c.getVirtualMedia();
      expect(slot.inserted).toBe(false);
      expect(slot.image).toBeUndefined();
    } finally {
      await c.close();
    }
  });

  it('an image the BMC cannot download is a BMC error, not a silent success', async () => {
    const c = await RedfishClient.connect(opts(SUSHY_SYSTEMS.bm03));
    try {
      const err = await failure(c.insertMedia(iso.url('missing.iso')));
      expect(['bmc-fault', 'rejected']).toContain(err.kind);
      expect(err.message).toContain('InsertMedia');
      expect((await c.getVirtualMedia()).inserted).toBe(false);
    } finally {
      await c.close();
    }
  });

  it('through the common BmcClient from a BMC address: power, reboot, boot device, inventory, media', async () => {
    const addr = access(`redfish-virtualmedia+${SUSHY_URL}${SUSHY_SYSTEMS.bm04}`);
    const bmc = await openBmc(addr, { username: SUSHY_USER, password: SUSHY_PASSWORD }, { timeoutMs: 10_000 });
    try {
      expect(bmc.protocol).toBe('redfish');
      await bmc.setPower('off', wait);
      expect(await bmc.getPower()).toBe('off');
      await bmc.setPower('on', wait);
      expect(await bmc.getPower()).toBe('on');
      await bmc.reboot('hard', wait);
      expect(await bmc.getPower()).toBe('on');
      await bmc.setBootDevice('cdrom', { mode: 'UEFI' });
      await bmc.insertMedia!(iso.url('tiny.iso'));
      expect((await bmc.getInventory!()).ramMebibytes).toBe(16384);
      await bmc.ejectMedia!();
      await bmc.setPower('soft-off', wait);
      expect(await bmc.getPower()).toBe('off');
    } finally {
      await bmc.close();
    }
    expect(await checkBmc(addr, { username: SUSHY_USER, password: SUSHY_PASSWORD })).toBe('off');
  });

  it('a wrong password is bad-credentials, and the message never shows it', async () => {
    const secret = 'Wr0ng-Secret-xyz';
    const err = await failure(RedfishClient.connect(opts(SUSHY_SYSTEMS.bm01, { password: secret })));
    expect(err.kind).toBe('bad-credentials');
    expect(err.status).toBe(401);
    expect(err.message).toContain('rejected the credentials of user "admin"');
    expect(err.message).not.toContain(secret);
  });

  it('a wrong port is unreachable (connection refused)', async () => {
    const port = await unusedPort();
    const started = Date.now();
    const err = await failure(RedfishClient.connect({ ...opts(SUSHY_SYSTEMS.bm01), endpoint: { transport: 'http', host: '127.0.0.1', port, path: SUSHY_SYSTEMS.bm01 } }));
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(err.kind).toBe('unreachable');
    expect(err.message).toContain(`127.0.0.1:${port}`);
    expect(err.message).toContain('connection refused');
  });

  it('an unknown system is not-found, listing the systems the BMC has', async () => {
    const err = await failure(RedfishClient.connect(opts('/redfish/v1/Systems/no-such-system')));
    expect(err.kind).toBe('not-found');
    expect(err.message).toContain('system /redfish/v1/Systems/no-such-system not found');
    expect(err.message).toContain(SUSHY_SYSTEMS.bm01);
  });

  it('the service root path is ambiguous when the BMC has several systems', async () => {
    const err = await failure(RedfishClient.connect(opts('/redfish/v1')));
    expect(err.kind).toBe('not-found');
    // As many systems as the emulator's systems file holds.
    const systems = (JSON.parse(readFileSync(join(REPO_ROOT, 'scripts', 'sushy-fake-systems.json'), 'utf8')) as unknown[]).length;
    expect(systems).toBeGreaterThan(1);
    expect(err.message).toMatch(new RegExp(`has ${systems} systems .*name one in the BMC address`));
  });

  it('HTTPS against the plain-HTTP port is a TLS error that says so', async () => {
    const err = await failure(RedfishClient.connect({ ...opts(SUSHY_SYSTEMS.bm01), endpoint: { transport: 'https', host: '127.0.0.1', port: SUSHY_PORT, path: SUSHY_SYSTEMS.bm01 } }));
    expect(err.kind).toBe('tls');
    expect(err.message).toContain('does not speak TLS');
  });
});
