/**
 * BIOS settings (`Bios` + its `@Redfish.Settings` SettingsObject, pending
 * until a reboot) and firmware (`UpdateService.SimpleUpdate` followed through
 * its task monitor, `FirmwareInventory` versions) with the Redfish client,
 * against the DMTF rack-mount mockup (support/redfish-mockup-firmware.ts gives
 * its Bios and UpdateService resources their behaviour) and against
 * sushy-tools extended by scripts/sushy_firmware.py (system mf-bm-08, whose
 * entry in scripts/sushy-fake-systems.json has a BIOS and firmware versions).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import { RedfishClient, type RedfishClientOptions } from '../../clients/redfish/client';
import { applyBios, readBios, setPendingBios } from '../../clients/redfish/bios';
import { componentOf, firmwareInventory, simpleUpdate } from '../../clients/redfish/firmware';
import { redfishFailure } from './support/failure';
import { serveFiles, type FileServer } from '../../bench/support/bmc-files';
import { MOCKUP_SYSTEM, RedfishMockup } from './support/redfish-mockup';
import { addFirmware, type FirmwareMockup } from './support/redfish-mockup-firmware';
import { ownSushy } from './support/sushy';
import { unusedPort } from '../support/ports';

const failure = redfishFailure;

let images: FileServer;
beforeAll(async () => {
  images = await serveFiles({ 'bios-2.1.0.bin': Buffer.from('2.1.0\n'), 'bmc-5.0.1.bin': Buffer.from('5.0.1\n') });
});
afterAll(async () => images?.close());

describe('BIOS and firmware on the DMTF mockup', () => {
  let m: RedfishMockup;
  let fw: FirmwareMockup;
  const connect = () =>
    RedfishClient.connect({
      endpoint: { transport: 'http', host: '127.0.0.1', port: m.port, path: MOCKUP_SYSTEM },
      username: 'admin',
      password: 'password',
      taskPollIntervalMs: 50,
    } satisfies RedfishClientOptions);

  beforeAll(async () => {
    m = await new RedfishMockup({ taskPolls: 1 }).start();
    fw = addFirmware(m);
  });
  afterAll(async () => m?.close());

  it('reads the current attributes and what the SettingsObject holds pending', async () => {
    const c = await connect();
    try {
      const bios = await readBios(c);
      expect(bios.path).toBe(`${MOCKUP_SYSTEM}/Bios`);
      expect(bios.settingsPath).toBe(`${MOCKUP_SYSTEM}/Bios/Settings`);
      expect(bios.attributes.ProcTurboMode).toBe('Enabled');
      expect(bios.attributes.ProcCoreDisable).toBe(0);
      expect(bios.pending).toMatchObject({ ProcTurboMode: 'Disabled', EmbeddedSata: 'Ahci' });
      expect(bios.settingsMessages).toEqual(['Base.1.0.SettingsFailed (/Attributes/ProcTurboMode)']);
    } finally {
      await c.close();
    }
  });

  it('refuses an attribute the BIOS lacks before sending anything', async () => {
    const c = await connect();
    try {
      const patches = m.requests('PATCH').length;
      const err = await failure(setPendingBios(c, { NoSuchKnob: 'On' }));
      expect(err.kind).toBe('rejected');
      expect(err.message).toContain('has no attribute NoSuchKnob');
      expect(err.message).toContain('ProcHyperthreading');
      expect(m.requests('PATCH').length).toBe(patches);
    } finally {
      await c.close();
    }
  });

  it('PATCHes only what differs into the SettingsObject (typed as the BIOS has it), applies it by a reboot and reads it back', async () => {
    const c = await connect();
    try {
      const result = await applyBios(c, { ProcHyperthreading: 'Disabled', ProcCoreDisable: '2', BootMode: 'Uefi' }, { pollIntervalMs: 50 });
      expect(result).toEqual({ changed: ['ProcHyperthreading', 'ProcCoreDisable'], rebooted: true });
      const patch = m.requests('PATCH', '/Bios/Settings').at(-1)!;
      expect(patch.body).toEqual({ Attributes: { ProcHyperthreading: 'Disabled', ProcCoreDisable: 2 } });
      expect(patch.ifMatch).toBeDefined();
      // The mockup system is On: a restart, and it stays on.
      expect(m.requests('POST', 'ComputerSystem.Reset').map((r) => (r.body as { ResetType: string }).ResetType)).toEqual(['ForceRestart']);
      const after = await readBios(c);
      expect(after.attributes).toMatchObject({ ProcHyperthreading: 'Disabled', ProcCoreDisable: 2, ProcTurboMode: 'Disabled' });
      expect(after.pending).toEqual({});
      // Again: nothing differs, nothing sent, no reboot.
      const resets = m.requests('POST', 'ComputerSystem.Reset').length;
      expect(await applyBios(c, { ProcHyperthreading: 'Disabled', ProcCoreDisable: '2' })).toEqual({ changed: [], rebooted: false });
      expect(m.requests('POST', 'ComputerSystem.Reset').length).toBe(resets);
    } finally {
      await c.close();
    }
  });

  it('records the firmware inventory of the system and its manager', async () => {
    const c = await connect();
    try {
      const inventory = await firmwareInventory(c);
      expect(inventory.map((i) => [i.id, i.version])).toEqual([
        ['BMC', '1.45.455b66-rev4'],
        ['SS', '2.50'], // related to the system's SimpleStorage/1
        ['BIOS', 'P79 v1.45'],
      ]);
      expect(componentOf(inventory, 'bios', c.systemPath)?.id).toBe('BIOS');
      expect(componentOf(inventory, 'bmc', c.systemPath)?.id).toBe('BMC');
    } finally {
      await c.close();
    }
  });

  it('SimpleUpdate: the BMC fetches the image, the task monitor is followed to Completed, the inventory shows the new version', async () => {
    const c = await connect();
    try {
      const bios = componentOf(await firmwareInventory(c), 'bios', c.systemPath)!;
      const task = await simpleUpdate(c, { imageUri: images.url('bios-2.1.0.bin'), targets: [bios.path] });
      expect(task.TaskState).toBe('Completed');
      const post = m.requests('POST', 'SimpleUpdate').at(-1)!;
      expect(post.body).toEqual({ ImageURI: images.url('bios-2.1.0.bin'), TransferProtocol: 'HTTP', Targets: [bios.path] });
      expect(m.requests('GET', '/TaskService/TaskMonitors/').length).toBeGreaterThan(0);
      expect(fw.fetched).toContain(images.url('bios-2.1.0.bin'));
      expect(componentOf(await firmwareInventory(c), 'bios', c.systemPath)?.version).toBe('2.1.0');
    } finally {
      await c.close();
    }
  });

  it('SimpleUpdate: a task that fails (the image cannot be fetched) is a task-failed error with the BMC message; a non-http URL is refused unsent', async () => {
    const c = await connect();
    try {
      const err = await failure(simpleUpdate(c, { imageUri: images.url('missing.bin'), targets: ['/redfish/v1/UpdateService/FirmwareInventory/BMC'] }));
      expect(err.kind).toBe('task-failed');
      expect(err.message).toContain('ended Exception');
      expect(err.message).toContain('HTTP 404');
      const posts = m.requests('POST', 'SimpleUpdate').length;
      const bad = await failure(simpleUpdate(c, { imageUri: 'ftp://192.0.2.1/bios.bin' }));
      expect(bad.kind).toBe('rejected');
      expect(bad.message).toContain('must be http or https, not ftp');
      expect(m.requests('POST', 'SimpleUpdate').length).toBe(posts);
    } finally {
      await c.close();
    }
  });
});

describe('BIOS and firmware on sushy-tools (scripts/sushy_firmware.py)', () => {
  let sushy: ReturnType<typeof ownSushy>;
  let port: number;
  const SYSTEM = '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000008';
  const connect = () =>
    RedfishClient.connect({
      endpoint: { transport: 'http', host: '127.0.0.1', port, path: SYSTEM },
      username: 'admin',
      password: 'password',
      taskPollIntervalMs: 200,
    });

  beforeAll(async () => {
    port = await unusedPort();
    sushy = ownSushy('bmc-firmware-sushy', port);
    sushy.stop();
    // The BIOS and firmware state persists in the state folder: start from the config's.
    rmSync(join(REPO_ROOT, '.state', 'bmc-firmware-sushy'), { recursive: true, force: true });
    sushy.start();
  });
  afterAll(() => sushy?.stop());

  it('keeps BIOS changes pending until the system boots, then shows them', async () => {
    const c = await connect();
    try {
      const before = await readBios(c);
      expect(before.settingsPath).toBe(`${SYSTEM}/BIOS/Settings`);
      expect(before.attributes).toMatchObject({ ProcVirtualization: 'Enabled', SriovGlobalEnable: 'Disabled' });
      const flip = 'Disabled';
      expect(await setPendingBios(c, { ProcVirtualization: flip })).toEqual(['ProcVirtualization']);
      const pending = await readBios(c);
      expect(pending.attributes.ProcVirtualization).toBe(before.attributes.ProcVirtualization);
      expect(pending.pending).toEqual({ ProcVirtualization: flip });
      const err = await failure(setPendingBios(c, { Turbo: 'On' }));
      expect(err.kind).toBe('rejected');

      const applied = await applyBios(c, { ProcVirtualization: flip, SriovGlobalEnable: 'Enabled' }, { pollIntervalMs: 200 });
      expect(applied).toEqual({ changed: ['ProcVirtualization', 'SriovGlobalEnable'], rebooted: true });
      const after = await readBios(c);
      expect(after.attributes).toMatchObject({ ProcVirtualization: flip, SriovGlobalEnable: 'Enabled' });
      expect(after.pending).toEqual({});
      expect(await c.getPowerState()).toBe('Off');
    } finally {
      await c.close();
    }
  });

  it('lists the system firmware, updates the BIOS and BMC through SimpleUpdate tasks, and types a failed task', async () => {
    const c = await connect();
    try {
      const inventory = await firmwareInventory(c);
      expect(inventory.map((i) => i.id).sort()).toEqual([`6d660000-0000-4000-8000-000000000008-BIOS`, `6d660000-0000-4000-8000-000000000008-BMC`]);
      const bios = componentOf(inventory, 'bios', c.systemPath)!;
      const bmc = componentOf(inventory, 'bmc', c.systemPath)!;
      expect([bios.version, bmc.version]).toEqual(['1.4.2', '4.40.10']);
      expect((await simpleUpdate(c, { imageUri: images.url('bios-2.1.0.bin'), targets: [bios.path] })).TaskState).toBe('Completed');
      expect((await simpleUpdate(c, { imageUri: images.url('bmc-5.0.1.bin'), targets: [bmc.path] })).TaskState).toBe('Completed');
      const now = await firmwareInventory(c);
      expect(componentOf(now, 'bios', c.systemPath)?.version).toBe('2.1.0');
      expect(componentOf(now, 'bmc', c.systemPath)?.version).toBe('5.0.1');
      expect((await c.getSystem()).BiosVersion).toBe('2.1.0');
      const err = await failure(simpleUpdate(c, { imageUri: images.url('nothing-here.bin'), targets: [bios.path] }));
      expect(err.kind).toBe('task-failed');
      expect(err.message).toContain('HTTP 404');
    } finally {
      await c.close();
    }
  });
});
