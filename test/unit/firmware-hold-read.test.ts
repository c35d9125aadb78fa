/** The controller's check that a firmware read is not older than the host's last service (k8s/controller/firmware-hold.ts). */
import { describe, expect, it } from 'vitest';
import { readPredatesService, SERVICED_READ_MARGIN_MS } from '../../k8s/controller/firmware-hold';

const at = '2026-11-28T22:00:00.000Z';
const t = Date.parse(at);

describe('readPredatesService', () => {
  it('trusts any read when the host was never serviced', () => {
    expect(readPredatesService({}, 0)).toBe(false);
  });
  it('distrusts a read begun before the service ended, or within the clock margin after it', () => {
    expect(readPredatesService({ firmwareServiced: { at } }, t - 60_000)).toBe(true);
    expect(readPredatesService({ firmwareServiced: { at } }, t)).toBe(true);
    expect(readPredatesService({ firmwareServiced: { at } }, t + SERVICED_READ_MARGIN_MS - 1)).toBe(true);
  });
  it('trusts a read begun more than the margin after the service', () => {
    expect(readPredatesService({ firmwareServiced: { at } }, t + SERVICED_READ_MARGIN_MS + 1)).toBe(false);
  });
});
