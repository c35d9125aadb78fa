/** IPv6 hosts, boot MACs, and the Ironic driver_info made from a parsed address. */
import { describe, it, expect } from 'vitest';
import { isIPv6, normalizeMac, validateBootMac } from '../../model/bmc';
import { ironicDriverInfo } from '../../clients/ironic/driver-info';
import { mustParse, mustFail, SYS } from '../support/bmc-address';

describe('isIPv6', () => {
  it.each([
    ['::', true],
    ['::1', true],
    ['fe80::1', true],
    ['1:2:3:4:5:6:7:8', true],
    ['1:2:3:4:5:6:1.2.3.4', true],
    ['::ffff:1.2.3.4', true],
    ['1::', true],
    ['1:2:3:4:5:6:7:8:9', false],
    ['1:2:3:4:5:6:7', false],
    ['1::2::3', false],
    [':1', false],
    ['1:', false],
    ['12345::', false],
    ['1.2.3.4::', false],
    ['::1.2.3', false],
    ['g::', false],
  ])('%s → %s', (s, want) => {
    expect(isIPv6(s)).toBe(want);
  });
});

describe('normalizeMac', () => {
  it('accepts colon and dash forms in any case and returns lower-case colon form', () => {
    expect(normalizeMac('52:54:00:AB:cd:EF')).toEqual({ ok: true, value: '52:54:00:ab:cd:ef' });
    expect(normalizeMac('52-54-00-AB-CD-EF')).toEqual({ ok: true, value: '52:54:00:ab:cd:ef' });
    expect(normalizeMac('00:00:00:00:00:01')).toEqual({ ok: true, value: '00:00:00:00:00:01' });
  });

  it.each([
    ['', /required/],
    ['52:54:00:ab:cd', /not a 6-octet MAC/],
    ['52:54:00:ab:cd:ef:01:02', /EUI-64/],
    ['5254.00ab.cdef', /not a 6-octet MAC/],
    ['525400abcdef', /not a 6-octet MAC/],
    ['52:54:00-ab:cd:ef', /mixes or misplaces separators/],
    ['52 54 00 ab cd ef', /not a MAC address/],
    ['52:54:00:ab:cd:eg', /not a MAC address/],
    ['0x:54:00:ab:cd:ef', /not a MAC address/],
    ['00:00:00:00:00:00', /all-zero/],
    ['ff:ff:ff:ff:ff:ff', /broadcast/],
    ['FF-FF-FF-FF-FF-FF', /broadcast/],
    ['01:00:5e:00:00:01', /multicast/],
    ['33:33:00:00:00:01', /multicast/],
  ])('rejects %j', (mac, re) => {
    const errors = mustFail(normalizeMac(mac));
    expect(errors[0]!.field).toBe('spec.bootMACAddress');
    expect(errors[0]!.reason).toMatch(re);
  });

  it('uses the caller-supplied field name', () => {
    expect(mustFail(normalizeMac('x', 'spec.nics[0].mac'))[0]!.field).toBe('spec.nics[0].mac');
  });
});

describe('validateBootMac', () => {
  it('requires a MAC for fake and names the BMC type', () => {
    const fake = mustParse('fake://n');
    for (const mac of [undefined, '']) {
      const errors = mustFail(validateBootMac(fake, mac));
      expect(errors[0]!.field).toBe('spec.bootMACAddress');
      expect(errors[0]!.reason).toContain('BMC type fake');
      expect(errors[0]!.reason).toContain('requires a boot MAC address');
    }
    expect(validateBootMac(fake, '52:54:00:00:00:01')).toEqual({ ok: true, value: '52:54:00:00:00:01' });
  });

  it('MAC optional for ipmi and redfish, validated and normalized when present', () => {
    const ipmi = mustParse('10.0.0.1');
    const rf = mustParse(`redfish-virtualmedia://h${SYS}`);
    expect(validateBootMac(ipmi, undefined)).toEqual({ ok: true, value: undefined });
    expect(validateBootMac(rf, '')).toEqual({ ok: true, value: undefined });
    expect(validateBootMac(rf, 'AA-BB-CC-DD-EE-FF')).toEqual({ ok: true, value: 'aa:bb:cc:dd:ee:ff' });
    expect(mustFail(validateBootMac(ipmi, 'nope'))[0]!.field).toBe('spec.bootMACAddress');
  });
});

describe('ironicDriverInfo', () => {
  const creds = { username: 'admin', password: 's3cret' };

  it('ipmi, default port', () => {
    expect(ironicDriverInfo(mustParse('10.0.0.1'), creds, {})).toEqual({
      ipmi_address: '10.0.0.1',
      ipmi_port: 623,
      ipmi_username: 'admin',
      ipmi_password: 's3cret',
      ipmi_priv_level: 'ADMINISTRATOR',
    });
  });

  it('ipmi IPv6 address has no brackets, explicit port, verify_ca when disabled', () => {
    expect(ironicDriverInfo(mustParse('[fd00::5]:6230'), creds, { disableCertificateVerification: true })).toEqual({
      ipmi_address: 'fd00::5',
      ipmi_port: 6230,
      ipmi_username: 'admin',
      ipmi_password: 's3cret',
      ipmi_priv_level: 'ADMINISTRATOR',
      ipmi_verify_ca: false,
    });
  });

  it('redfish defaults to https and carries the system id', () => {
    expect(ironicDriverInfo(mustParse(`redfish://10.0.0.1${SYS}`), creds, {})).toEqual({
      redfish_address: 'https://10.0.0.1',
      redfish_system_id: SYS,
      redfish_username: 'admin',
      redfish_password: 's3cret',
    });
  });

  it('redfish+http with port and IPv6 host, certificate verification disabled', () => {
    expect(
      ironicDriverInfo(mustParse(`idrac-virtualmedia+http://[fd00::5]:8000${SYS}`), creds, { disableCertificateVerification: true }),
    ).toEqual({
      redfish_address: 'http://[fd00::5]:8000',
      redfish_system_id: SYS,
      redfish_username: 'admin',
      redfish_password: 's3cret',
      redfish_verify_ca: false,
    });
  });

  it('redfish_verify_ca is absent unless verification is disabled', () => {
    const info = ironicDriverInfo(mustParse(`ilo5-redfish+https://h:443${SYS}`), creds, { disableCertificateVerification: false });
    expect(info.redfish_address).toBe('https://h:443');
    expect('redfish_verify_ca' in info).toBe(false);
  });

  it('fake-hardware gets nothing', () => {
    expect(ironicDriverInfo(mustParse('fake://n'), creds, { disableCertificateVerification: true })).toEqual({});
  });
});

// ---------------------------------------------------------------------------
// Property tests
// ---------------------------------------------------------------------------
