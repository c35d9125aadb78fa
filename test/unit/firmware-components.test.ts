/** HostFirmwareComponents' pure parts (model/firmware-components.ts): status from Ironic, spec.updates checked. */
import { describe, expect, it } from 'vitest';
import { componentsFromIronic, firmwareUpdatesErrors, sameComponents, updatesChanged } from '../../model/firmware-components';

const IRONIC = [
  { component: 'bios', initial_version: '1.4.2', current_version: '2.1.0', last_version_flashed: '2.1.0', updated_at: '2026-11-24T08:00:00+00:00' },
  { component: 'bmc', initial_version: '4.40.10', current_version: '4.40.10', last_version_flashed: null, updated_at: null },
];

describe('HostFirmwareComponents', () => {
  it('status.components from Ironic, nulls left out', () => {
    expect(componentsFromIronic(IRONIC)).toEqual([
      { component: 'bios', initialVersion: '1.4.2', currentVersion: '2.1.0', lastVersionFlashed: '2.1.0', updatedAt: '2026-11-24T08:00:00+00:00' },
      { component: 'bmc', initialVersion: '4.40.10', currentVersion: '4.40.10' },
    ]);
  });

  it('status.components read back with keys sorted (as the API server returns them) are the same; a changed version is not', () => {
    const written = componentsFromIronic(IRONIC);
    const readBack = JSON.parse(JSON.stringify(written, (_k, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([x], [y]) => x.localeCompare(y))) : v))) as typeof written;
    expect(JSON.stringify(readBack)).not.toBe(JSON.stringify(written));
    expect(sameComponents(readBack, written)).toBe(true);
    expect(sameComponents(readBack, componentsFromIronic([{ ...IRONIC[0]!, current_version: '2.2.0' }, IRONIC[1]!]))).toBe(false);
    expect(sameComponents(undefined, [])).toBe(true);
    expect(sameComponents(undefined, written)).toBe(false);
  });

  it("refuses what the firmware clean step refuses, and a component Ironic does not report where it reports any", () => {
    const components = componentsFromIronic(IRONIC.slice(0, 1));
    expect(firmwareUpdatesErrors([{ component: 'nic', url: 'http://x/a.bin' }, { component: 'bios', url: 'ftp://x/b.bin' }], components)).toEqual([
      { field: 'spec.updates[0].component', reason: 'unknown firmware component "nic"; accepted: bios, bmc' },
      { field: 'spec.updates[1].url', reason: 'must be an http or https URL of at most 2048 characters (the BMC fetches it)' },
    ]);
    expect(firmwareUpdatesErrors([{ component: 'bmc', url: 'https://x/bmc.bin' }], components)).toEqual([
      { field: 'spec.updates[0].component', reason: 'Ironic reports no bmc component for this host; it reports: bios' },
    ]);
    expect(firmwareUpdatesErrors([{ component: 'bmc', url: 'https://x/bmc.bin' }], [])).toEqual([]);
    expect(firmwareUpdatesErrors([], components)).toEqual([]);
  });

  it('a change is any difference from the updates last handed over, order included', () => {
    const a = { component: 'bios', url: 'http://x/a.bin' };
    const b = { component: 'bmc', url: 'http://x/b.bin' };
    expect(updatesChanged([a, b], [a, b])).toBe(false);
    expect(updatesChanged([a, b], [b, a])).toBe(true);
    expect(updatesChanged([a], undefined)).toBe(true);
    expect(updatesChanged([], undefined)).toBe(false);
  });
});
