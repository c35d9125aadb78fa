/**
 * A manual clean of a `spec.provisioner: direct` host (patch direct-clean):
 * the bios and firmware steps run over Redfish by metalflow itself, against
 * the test stack's sushy-tools (system mf-bm-08, whose BIOS and firmware
 * scripts/sushy_firmware.py emulates: BIOS settings pending until the system
 * boots, SimpleUpdate tasks that fetch the image from a server here). What
 * the clean did is read from sushy, not from metalflow's view.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { ApiError } from '../../api/host-service';
import { RedfishClient } from '../../clients/redfish/client';
import { readBios } from '../../clients/redfish/bios';
import { componentOf, firmwareInventory } from '../../clients/redfish/firmware';
import type { HostSpec } from '../../model/host';
import type { HostView } from '../../contracts/host';
import { startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { SUSHY_URL } from '../support/env';
import { resetRedfishSystem } from '../support/redfish-system';
import { operationEvents } from '../support/operation-history';
import { serveFiles, type FileServer } from '../../bench/support/bmc-files';

const NS = 'direct-clean';
const SYSTEM = '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000008';
const ADDRESS = `redfish+${SUSHY_URL}${SYSTEM}`;

let h: Harness;
let images: FileServer;
/** Versions unique to this run: sushy's state outlives it. */
const BIOS_VERSION = `3.${Date.now() % 100000}`;
const BMC_VERSION = `6.${Date.now() % 100000}`;

const ref = (name: string) => ({ namespace: NS, name });
const view = (name: string): Promise<HostView> => h.hosts.get(ref(name));
const idle = (name: string, state: string) => async () => {
  const v = await view(name);
  return v.status.provisioning.state === state && !v.currentOperation && !v.cleanRequest ? v : undefined;
};

/** sushy's own view of the system's BIOS and firmware. */
async function onSushy<T>(fn: (c: RedfishClient) => Promise<T>): Promise<T> {
  const url = new URL(SUSHY_URL);
  const c = await RedfishClient.connect({ endpoint: { transport: 'http', host: url.hostname, port: Number(url.port), path: SYSTEM }, username: 'admin', password: 'password' });
  try {
    return await fn(c);
  } finally {
    await c.close();
  }
}

async function rejection(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

const names: string[] = [];
async function available(): Promise<string> {
  const name = uniq('dc');
  names.push(name);
  const spec: HostSpec = { bmc: { address: ADDRESS, credentialsName: `${name}-bmc` }, online: false, provisioner: 'direct' };
  await h.hosts.put(ref(name), { spec, credentials: { username: 'admin', password: 'password' } });
  await waitFor(`${name} available`, idle(name, 'available'), { timeoutMs: 90_000 });
  return name;
}

beforeAll(async () => {
  h = await startHarness();
  images = await serveFiles({ 'bios.bin': Buffer.from(`${BIOS_VERSION}\n`), 'bmc.bin': Buffer.from(`${BMC_VERSION}\n`) });
  await resetRedfishSystem(ADDRESS);
});

afterAll(async () => {
  for (const name of names) await h?.hosts.remove(ref(name)).catch(() => undefined);
  await images?.close();
  await h?.close();
}, 120_000);

describe('manual clean of a direct host (Redfish BIOS and firmware)', () => {
  it('applies BIOS settings by a reboot and flashes BIOS and BMC firmware, each step visible; the same BIOS again is skipped', async () => {
    const name = await available();
    const before = await onSushy(readBios);
    const virtualization = before.attributes.ProcVirtualization !== 'Enabled';
    const flag = virtualization ? 'Enabled' : 'Disabled';

    const accepted = await h.hosts.clean(ref(name), {
      steps: [
        { name: 'bios', firmware: { virtualizationEnabled: virtualization }, settings: { BootMode: 'Uefi' } },
        { name: 'firmware', updates: [{ component: 'bios', url: images.url('bios.bin') }, { component: 'bmc', url: images.url('bmc.bin') }] },
      ],
    });
    expect(accepted.cleanRequest?.request.steps.map((s) => s.name)).toEqual(['bios', 'firmware']);
    const done = await waitFor('the clean done and the host available', idle(name, 'available'), { timeoutMs: 180_000 });

    // sushy shows it: the setting took (pending until the reboot the step made), the firmware versions are the images'.
    const after = await onSushy(readBios);
    expect(after.attributes).toMatchObject({ ProcVirtualization: flag, BootMode: 'Uefi' });
    expect(after.pending).toEqual({});
    const inventory = await onSushy(async (c) => [await firmwareInventory(c), c.systemPath] as const);
    expect(componentOf(inventory[0], 'bios', inventory[1])?.version).toBe(BIOS_VERSION);
    expect(componentOf(inventory[0], 'bmc', inventory[1])?.version).toBe(BMC_VERSION);
    expect(images.hits('/bios.bin')).toBe(1);
    expect(images.hits('/bmc.bin')).toBe(1);

    const clean = done.operations.filter((o) => o.kind === 'clean');
    expect(clean).toHaveLength(1);
    expect(clean[0]).toMatchObject({ state: 'preparing', outcome: 'succeeded', steps: ['bios', 'firmware'], step: 'firmware' });
    expect(clean[0]!.note).toMatch(new RegExp(`^clean steps: bios \\(ProcVirtualization applied by a reboot\\), firmware \\(bios \\S+ → ${BIOS_VERSION}, bmc \\S+ → ${BMC_VERSION}\\)$`));
    expect(done.status.poweredOn).toBe(false);
    expect(done.status.provisioning.ID).toBe('');
    const summaries = (await operationEvents(h.client, ref(name), clean[0]!))
      .map((e) => e.activityTaskScheduledEventAttributes && e.userMetadata?.summary)
      .filter((s) => s)
      .map((s) => String(defaultPayloadConverter.fromPayload(s!)));
    const seq = clean[0]!.seq;
    expect(summaries).toEqual([`${seq}-clean: applyBmcBios bios`, `${seq}-clean: updateBmcFirmware firmware bios`, `${seq}-clean: updateBmcFirmware firmware bmc`]);

    // The same BIOS settings again: nothing pending, no reboot.
    await h.hosts.clean(ref(name), { steps: [{ name: 'bios', firmware: { virtualizationEnabled: virtualization } }] });
    const again = await waitFor('the second clean done', async () => {
      const v = await idle(name, 'available')();
      return v && v.operations.filter((o) => o.kind === 'clean').length === 2 ? v : undefined;
    }, { timeoutMs: 120_000 });
    expect(again.operations.filter((o) => o.kind === 'clean').at(-1)).toMatchObject({ outcome: 'succeeded', note: 'clean steps: bios skipped (the BIOS already has these settings)' });
  }, 300_000);

  it('refuses steps that need Ironic and bad firmware URLs before anything runs; a firmware task that fails is a preparation error with the BMC reason, fixed by withdrawing', async () => {
    const name = await available();
    const erase = await rejection(h.hosts.clean(ref(name), { steps: [{ name: 'bios', settings: { BootMode: 'Uefi' } }, { name: 'erase-metadata' }] }));
    expect(erase.status).toBe(409);
    expect(erase.message).toContain("erase-metadata needs Ironic's agent: spec.provisioner direct runs only the bios and firmware steps");
    const ftp = await rejection(h.hosts.clean(ref(name), { steps: [{ name: 'firmware', updates: [{ component: 'bios', url: 'ftp://192.0.2.1/bios.bin' }] }] }));
    expect(ftp.status).toBe(400);
    expect(ftp.message).toContain('steps[0].updates[0].url');
    expect((await view(name)).cleanRequest).toBeUndefined();

    await h.hosts.clean(ref(name), { steps: [{ name: 'firmware', updates: [{ component: 'bmc', url: `${images.url('missing.bin')}?X-Signature=s3cr3t` }] }] });
    const failed = await waitFor('the firmware step failed', async () => {
      const v = await view(name);
      return v.status.errorCount >= 1 ? v : undefined;
    }, { timeoutMs: 120_000 });
    expect(failed.status.provisioning.state).toBe('preparing');
    expect(failed.status.errorType).toBe('preparation error');
    expect(failed.status.errorMessage).toMatch(/task .* ended Exception: .*HTTP 404/);
    expect(failed.status.errorMessage).not.toContain('s3cr3t');
    expect(failed.operations.filter((o) => o.kind === 'clean').at(-1)).toMatchObject({ step: 'firmware' });
    await h.hosts.clean(ref(name), null);
    const back = await waitFor('available after the withdrawal', idle(name, 'available'), { timeoutMs: 120_000 });
    expect(back.status.errorType).toBe('');
  }, 300_000);
});
