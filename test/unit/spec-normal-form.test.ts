import { describe, expect, it } from 'vitest';
import { normalizeHostSpec } from '../../model/spec-normal-form';
import { validateHostSpec } from '../../model/validate';
import type { HostSpec } from '../../model/host';

const ref = { namespace: 'metal3', name: 'node-0' };
const spec = (mac: string | undefined, bmc = true): HostSpec => ({
  ...(bmc ? { bmc: { address: 'redfish+http://127.0.0.1:8000/redfish/v1/Systems/abc', credentialsName: 'node-0-bmc' } } : {}),
  ...(mac !== undefined ? { bootMACAddress: mac } : {}),
  online: true,
});

describe('normalizeHostSpec', () => {
  it.each(['00:5C:52:31:3A:9C', '00-5c-52-31-3a-9c', '00:5c:52:31:3a:9c', undefined])(
    'stores a valid spec (MAC %s) exactly as validation returns it',
    (mac) => {
      const valid = validateHostSpec(ref, spec(mac));
      expect(valid.ok).toBe(true);
      if (valid.ok) expect(normalizeHostSpec(spec(mac))).toEqual(valid.value.spec);
    },
  );

  it('never rejects: what it cannot normalise is kept as given', () => {
    expect(normalizeHostSpec(spec('not-a-mac')).bootMACAddress).toBe('not-a-mac');
    expect(normalizeHostSpec(spec('01:00:5E:00:00:01')).bootMACAddress).toBe('01:00:5E:00:00:01');
    expect(normalizeHostSpec(spec('')).bootMACAddress).toBe('');
    // A host without a BMC: validation never touched its MAC.
    expect(normalizeHostSpec(spec('00:5C:52:31:3A:9C', false)).bootMACAddress).toBe('00:5C:52:31:3A:9C');
  });

  it('returns a copy and leaves its input alone', () => {
    const input = spec('00:5C:52:31:3A:9C');
    const out = normalizeHostSpec(input);
    expect(out).not.toBe(input);
    expect(input.bootMACAddress).toBe('00:5C:52:31:3A:9C');
  });
});
