import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import {
  BMC_SCHEMES,
  BMC_TYPES,
  BMC_TYPE_TABLE,
  isIPv6,
  normalizeMac,
  parseBmcAddress,
  validateBootMac,
  type BmcAccess,
  type BmcType,
} from '../../types/bmc';
import { ironicDriverInfo } from '../../clients/ironic/driver-info';
import type { FieldError, Result } from '../../types/field-error';

function mustParse(address: string): BmcAccess {
  const r = parseBmcAddress(address);
  if (!r.ok) throw new Error(`expected ${address} to parse, got ${JSON.stringify(r.errors)}`);
  return r.value;
}

function mustFail<T>(r: Result<T>): FieldError[] {
  if (r.ok) throw new Error(`expected failure, got ${JSON.stringify(r.value)}`);
  return r.errors;
}

function reasonOf(address: string): string {
  const errors = mustFail(parseBmcAddress(address));
  expect(errors).toHaveLength(1);
  expect(errors[0]!.field).toBe('spec.bmc.address');
  return errors[0]!.reason;
}

const SYS = '/redfish/v1/Systems/1';
const REDFISH_TYPES: BmcType[] = [
  'redfish',
  'redfish-virtualmedia',
  'redfish-uefihttp',
  'idrac-redfish',
  'idrac-virtualmedia',
  'ilo5-redfish',
  'ilo5-virtualmedia',
];

describe('BMC_SCHEMES', () => {
  it('lists every scheme exactly once: ipmi, fake and three per redfish type', () => {
    expect(new Set(BMC_SCHEMES).size).toBe(BMC_SCHEMES.length);
    expect(BMC_SCHEMES).toHaveLength(2 + 3 * REDFISH_TYPES.length);
    expect(BMC_SCHEMES).toContain('ipmi');
    expect(BMC_SCHEMES).toContain('fake');
    for (const t of REDFISH_TYPES) {
      expect(BMC_SCHEMES).toContain(t);
      expect(BMC_SCHEMES).toContain(`${t}+http`);
      expect(BMC_SCHEMES).toContain(`${t}+https`);
    }
    expect(BMC_SCHEMES).not.toContain('ipmi+http');
    expect(BMC_SCHEMES).not.toContain('libvirt');
  });

  it('every scheme parses to a type in the table', () => {
    for (const scheme of BMC_SCHEMES) {
      const addr = scheme === 'fake' ? 'fake://n' : scheme === 'ipmi' ? 'ipmi://h' : `${scheme}://h${SYS}`;
      const a = mustParse(addr);
      expect(a.scheme).toBe(scheme);
      expect(BMC_TYPES).toContain(a.type);
      expect(a.driver).toBe(BMC_TYPE_TABLE[a.type].driver);
    }
  });
});

describe('parseBmcAddress: IPMI', () => {
  it('ipmi://host defaults to port 623 and the ipmi driver', () => {
    const a = mustParse('ipmi://192.168.122.1');
    expect(a).toEqual({
      type: 'ipmi',
      address: 'ipmi://192.168.122.1',
      scheme: 'ipmi',
      transport: 'ipmi',
      host: '192.168.122.1',
      port: 623,
      path: '',
      driver: 'ipmi',
      interfaces: { boot: 'ipxe', deploy: 'direct', inspect: 'agent', management: 'ipmitool', power: 'ipmitool', raid: 'no-raid' },
      capabilities: {
        needsMAC: false,
        supportsSecureBoot: false,
        supportsISOPreprovisioningImage: false,
        requiresProvisioningNetwork: true,
      },
    });
  });

  it('ipmi://host:port keeps the explicit port', () => {
    const a = mustParse('ipmi://bmc.example.com:6230');
    expect(a.host).toBe('bmc.example.com');
    expect(a.port).toBe(6230);
  });

  it('accepts an upper-case scheme and reports it lower-cased', () => {
    const a = mustParse('IPMI://10.0.0.1');
    expect(a.scheme).toBe('ipmi');
    expect(a.address).toBe('IPMI://10.0.0.1');
  });

  it('accepts a trailing slash with an empty path', () => {
    expect(mustParse('ipmi://10.0.0.1/').path).toBe('');
  });

  it('bare host is IPMI with the default port', () => {
    const a = mustParse('my.favoritebmc.com');
    expect(a.type).toBe('ipmi');
    expect(a.scheme).toBe('ipmi');
    expect(a.host).toBe('my.favoritebmc.com');
    expect(a.port).toBe(623);
  });

  it('bare host:port', () => {
    const a = mustParse('192.168.122.1:6233');
    expect([a.type, a.host, a.port]).toEqual(['ipmi', '192.168.122.1', 6233]);
  });

  it('bare bracketed IPv6 with and without port', () => {
    const a = mustParse('[fe80::fc33:62ff:fe83:8a76]:6233');
    expect([a.type, a.host, a.port]).toEqual(['ipmi', 'fe80::fc33:62ff:fe83:8a76', 6233]);
    const b = mustParse('[fe80::1]');
    expect([b.host, b.port]).toEqual(['fe80::1', 623]);
    const c = mustParse('ipmi://[::ffff:10.0.0.1]:624');
    expect([c.host, c.port]).toEqual(['::ffff:10.0.0.1', 624]);
  });

  it('rejects a path on IPMI addresses', () => {
    expect(reasonOf('ipmi://10.0.0.1/redfish/v1')).toMatch(/IPMI addresses take no path/);
  });
});

describe('parseBmcAddress: Redfish family', () => {
  const expected: Record<string, { driver: string; boot: string; management: string; power: string; vmedia: boolean; bios?: string; vendor?: string; raid: string }> = {
    redfish: { driver: 'redfish', boot: 'ipxe', management: 'redfish', power: 'redfish', raid: 'redfish', vmedia: false },
    'redfish-virtualmedia': { driver: 'redfish', boot: 'redfish-virtual-media', management: 'redfish', power: 'redfish', raid: 'redfish', vmedia: true },
    'redfish-uefihttp': { driver: 'redfish', boot: 'redfish-https', management: 'redfish', power: 'redfish', raid: 'redfish', vmedia: true },
    'idrac-redfish': { driver: 'idrac', boot: 'ipxe', management: 'idrac-redfish', power: 'idrac-redfish', raid: 'idrac-redfish', bios: 'idrac-redfish', vendor: 'idrac-redfish', vmedia: false },
    'idrac-virtualmedia': { driver: 'idrac', boot: 'idrac-redfish-virtual-media', management: 'idrac-redfish', power: 'idrac-redfish', raid: 'idrac-redfish', bios: 'idrac-redfish', vendor: 'idrac-redfish', vmedia: true },
    'ilo5-redfish': { driver: 'redfish', boot: 'ipxe', management: 'redfish', power: 'redfish', raid: 'redfish', vmedia: false },
    'ilo5-virtualmedia': { driver: 'redfish', boot: 'redfish-virtual-media', management: 'redfish', power: 'redfish', raid: 'redfish', vmedia: true },
  };

  for (const type of REDFISH_TYPES) {
    const e = expected[type]!;
    it(`${type}://, +http and +https map to the ${e.driver} driver with boot ${e.boot}`, () => {
      const plain = mustParse(`${type}://10.1.2.3${SYS}`);
      const http = mustParse(`${type}+http://10.1.2.3:8000${SYS}`);
      const https = mustParse(`${type}+https://bmc-1.lab${SYS}`);
      expect(plain.transport).toBe('https');
      expect(http.transport).toBe('http');
      expect(https.transport).toBe('https');
      expect(plain.port).toBeUndefined();
      expect(http.port).toBe(8000);
      expect(https.host).toBe('bmc-1.lab');
      for (const a of [plain, http, https]) {
        expect(a.type).toBe(type);
        expect(a.path).toBe(SYS);
        expect(a.driver).toBe(e.driver);
        expect(a.interfaces.boot).toBe(e.boot);
        expect(a.interfaces.deploy).toBe('direct');
        expect(a.interfaces.inspect).toBe('agent');
        expect(a.interfaces.management).toBe(e.management);
        expect(a.interfaces.power).toBe(e.power);
        expect(a.interfaces.raid).toBe(e.raid);
        expect(a.interfaces.firmware).toBe('redfish');
        expect(a.interfaces.bios).toBe(e.bios);
        expect(a.interfaces.vendor).toBe(e.vendor);
        expect(a.capabilities).toEqual({
          needsMAC: false,
          supportsSecureBoot: true,
          supportsISOPreprovisioningImage: e.vmedia,
          requiresProvisioningNetwork: !e.vmedia,
        });
      }
      expect(http.scheme).toBe(`${type}+http`);
    });

    it(`${type} requires a system path`, () => {
      for (const addr of [`${type}://10.0.0.1`, `${type}://10.0.0.1/`, `${type}+https://10.0.0.1:443`]) {
        const reason = reasonOf(addr);
        expect(reason).toContain('need the Redfish system path');
        expect(reason).toContain('/redfish/v1/Systems/1');
      }
      expect(reasonOf(`${type}://10.0.0.1/redfish/v1/`)).toMatch(/service root, not a system/);
    });
  }

  it('IPv6 Redfish host with port and path', () => {
    const a = mustParse('redfish://[fe80::fc33:62ff:fe83:8a76]:8080/redfish/v1/Systems/System.Embedded.1');
    expect(a.host).toBe('fe80::fc33:62ff:fe83:8a76');
    expect(a.port).toBe(8080);
    expect(a.path).toBe('/redfish/v1/Systems/System.Embedded.1');
  });

  it('keeps the path as given, with its trailing slash', () => {
    expect(mustParse('redfish://h/redfish/v1/Systems/a-b.c_d~e/').path).toBe('/redfish/v1/Systems/a-b.c_d~e/');
  });

  // Paths that name no system, or could name another resource once decoded, with the reason's words.
  const notASystem: [string, RegExp][] = [
    ['/redfish', /service root, not a system/],
    ['/redfish/', /service root, not a system/],
    ['/redfish/v1', /service root, not a system/],
    ['/REDFISH/V1/', /service root, not a system/],
    ['/redfish/v1/Systems', /Systems collection, not a system/],
    ['/redfish/v1/Systems/', /Systems collection, not a system/],
    ['/redfish/v1/Systems/..', /'\.' or '\.\.' segment/],
    ['/redfish/v1/Systems/.', /'\.' or '\.\.' segment/],
    ['/redfish/v1/Systems/1/../2', /'\.' or '\.\.' segment/],
    ['/redfish/v1/../v1/Systems/1', /'\.' or '\.\.' segment/],
    ['/redfish/v1/Systems/%2e%2e', /percent-encoded/],
    ['/redfish/v1/Systems/1%2F..%2F2', /percent-encoded/],
    ['/redfish/v1/%53ystems/1', /percent-encoded/],
    ['/redfish/v1/Systems/a%20b', /percent-encoded/],
    ['/redfish/v1//Systems/1', /empty segment/],
    ['//redfish/v1/Systems/1', /empty segment/],
    ['/redfish/v1/Systems/1//', /empty segment/],
    ['/redfish/v1/Managers/1', /not a Redfish system/],
    ['/redfish/v1/systems/1', /not a Redfish system/],
    ['/bmc/redfish/v1/Systems/1', /not a Redfish system/],
    ['/redfish/v2/Systems/1', /not a Redfish system/],
    ['/redfish/v1/Systems/1/Bios', /below a system/],
    ['/redfish/v1/Systems/a:b', /characters Redfish ids do not use/],
    ['/redfish/v1/Systems/a@b', /characters Redfish ids do not use/],
  ];
  it.each(notASystem)('rejects %s as not a system, with the accepted form', (path, reason) => {
    const message = reasonOf(`redfish://10.0.0.1${path}`);
    expect(message).toMatch(reason);
    expect(message).toContain('/redfish/v1/Systems/<id>');
  });

  it('rejects bad characters and bad percent-encoding in the path', () => {
    expect(reasonOf('redfish://h/redfish/v1/Systems/<1>')).toMatch(/contains '<'/);
    expect(reasonOf('redfish://h/redfish/v1/Systems/%zz')).toMatch(/'%' that is not followed by two hex digits/);
  });
});

describe('parseBmcAddress: fake', () => {
  it('fake://name uses fake-hardware with all-fake interfaces and needs a MAC', () => {
    const a = mustParse('fake://node-0');
    expect(a).toEqual({
      type: 'fake',
      address: 'fake://node-0',
      scheme: 'fake',
      transport: 'fake',
      host: 'node-0',
      path: '',
      driver: 'fake-hardware',
      interfaces: { boot: 'fake', deploy: 'fake', inspect: 'fake', management: 'fake', power: 'fake' },
      capabilities: {
        needsMAC: true,
        supportsSecureBoot: false,
        supportsISOPreprovisioningImage: false,
        requiresProvisioningNetwork: false,
      },
    });
    expect('port' in a).toBe(false);
  });

  it('rejects ports, paths and empty names on fake://', () => {
    expect(reasonOf('fake://node-0:1')).toMatch(/only a name, not a port/);
    expect(reasonOf('fake://node-0/x')).toMatch(/only a name, not a path/);
    expect(reasonOf('fake://')).toMatch(/host is empty/);
  });
});

describe('parseBmcAddress: rejections', () => {
  it('empty string', () => {
    expect(reasonOf('')).toMatch(/BMC address is required/);
  });

  it('non-string input at runtime', () => {
    expect(mustFail(parseBmcAddress(undefined as unknown as string))[0]!.reason).toMatch(/must be a string/);
  });

  it('unknown scheme lists every accepted scheme', () => {
    const reason = reasonOf('http://10.0.0.1/redfish/v1/Systems/1');
    expect(reason).toContain('unknown BMC scheme "http"');
    for (const s of BMC_SCHEMES) expect(reason).toContain(s);
    expect(reasonOf('libvirt://10.0.0.1')).toContain('accepted schemes: ipmi, redfish, redfish+http');
    expect(reasonOf('ipmi+https://10.0.0.1')).toContain('unknown BMC scheme "ipmi+https"');
  });

  it('missing // after a known scheme', () => {
    expect(reasonOf('ipmi:192.168.122.1')).toBe("missing '//' after \"ipmi:\"; write ipmi://192.168.122.1");
  });

  it('empty or invalid scheme', () => {
    expect(reasonOf('://10.0.0.1')).toMatch(/no scheme/);
    expect(reasonOf('1ipmi://10.0.0.1')).toMatch(/not a valid URL scheme/);
  });

  it('bad host characters and shapes', () => {
    expect(reasonOf('ipmi://bmc_1.example.com')).toMatch(/contains '_'/);
    expect(reasonOf('my-.examplehost.com')).toMatch(/starts or ends with '-'/);
    expect(reasonOf('ipmi://a..b')).toMatch(/empty DNS label/);
    expect(reasonOf('ipmi://host.')).toMatch(/empty DNS label/);
    expect(reasonOf(`ipmi://${'a'.repeat(64)}.com`)).toMatch(/longer than 63/);
    expect(reasonOf(`ipmi://${Array(64).fill('abc').join('.')}`)).toMatch(/limited to 253/);
    expect(reasonOf('ipmi://256.1.1.1')).toMatch(/not a valid IPv4 address/);
    expect(reasonOf('ipmi://1.2.3')).toMatch(/not a valid IPv4 address/);
    expect(reasonOf('ipmi://01.2.3.4')).toMatch(/leading zeros/);
    expect(reasonOf('[fe80::fc33:62ff:fe33:8xff]:6223')).toMatch(/not a valid IPv6 address/);
    expect(reasonOf('ipmi://[fe80::1%25eth0]')).toMatch(/zone identifiers/);
    expect(reasonOf('ipmi://[fe80::1')).toMatch(/without a matching/);
    expect(reasonOf('ipmi://[fe80::1]x')).toMatch(/after '\]'/);
    expect(reasonOf('ipmi://a[b]')).toMatch(/brackets are only allowed/);
  });

  it('unbracketed IPv6 explains the bracket form', () => {
    expect(reasonOf('fe80::1')).toBe('IPv6 addresses must be enclosed in brackets, e.g. [fe80::1] or [fe80::1]:623');
    expect(reasonOf('ipmi://a:1:2')).toMatch(/more than one ':'/);
  });

  it('port 0, 65536, empty and non-numeric', () => {
    expect(reasonOf('ipmi://10.0.0.1:0')).toBe('port 0 is out of range; ports are 1-65535');
    expect(reasonOf('10.0.0.1:65536')).toBe('port 65536 is out of range; ports are 1-65535');
    expect(reasonOf('ipmi://10.0.0.1:9999999999999999999999')).toMatch(/out of range/);
    expect(reasonOf(`redfish://h:abc${SYS}`)).toMatch(/port "abc" must be a decimal number/);
    expect(reasonOf('ipmi://10.0.0.1:+80')).toMatch(/digits only/);
    expect(reasonOf('ipmi://10.0.0.1:')).toMatch(/port is empty/);
    expect(mustParse('ipmi://10.0.0.1:65535').port).toBe(65535);
    expect(mustParse('ipmi://10.0.0.1:1').port).toBe(1);
  });

  it('userinfo points at the credentials secret', () => {
    for (const addr of ['ipmi://admin:secret@10.0.0.1', `redfish://root@h${SYS}`, 'admin:pw@10.0.0.1', 'admin@redfish://h/x']) {
      const reason = reasonOf(addr);
      expect(reason).toMatch(/must not contain user information/);
      expect(reason).toContain('credentials secret');
      expect(reason).not.toContain('secret@');
    }
  });

  it('query strings and fragments', () => {
    expect(reasonOf('ipmi://10.0.0.1?privilegelevel=OPERATOR')).toMatch(/query string/);
    expect(reasonOf(`redfish://h${SYS}#frag`)).toMatch(/fragment/);
  });

  it('whitespace anywhere, including leading/trailing', () => {
    expect(reasonOf(' ipmi://10.0.0.1')).toMatch(/whitespace \(U\+0020\) at position 0/);
    expect(reasonOf('ipmi://10.0.0.1\n')).toMatch(/whitespace \(U\+000A\)/);
    expect(reasonOf('ipmi://10.0.0.1 :623')).toMatch(/whitespace/);
    expect(reasonOf('\u00a0')).toMatch(/whitespace \(U\+00A0\)/);
  });

  it('control and non-ASCII characters', () => {
    expect(reasonOf('ipmi://b\u0000mc')).toMatch(/control or non-ASCII character \(U\+0000\)/);
    expect(reasonOf('ipmi://bücher.de')).toMatch(/punycode/);
  });

  it('uses the caller-supplied field name', () => {
    const r = parseBmcAddress('', 'hosts[3].bmc');
    expect(mustFail(r)[0]!.field).toBe('hosts[3].bmc');
  });

  it('returned access is a copy: mutating it does not change the table', () => {
    const a = mustParse('fake://x');
    a.capabilities.needsMAC = false;
    a.interfaces.boot = 'pxe';
    expect(BMC_TYPE_TABLE.fake.capabilities.needsMAC).toBe(true);
    expect(mustParse('fake://x').interfaces.boot).toBe('fake');
  });
});

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

const schemeArb = fc.constantFrom(...BMC_SCHEMES);
const dnsLabelArb = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/);
const dnsHostArb = fc
  .oneof(fc.domain(), fc.array(dnsLabelArb, { minLength: 1, maxLength: 4 }).map((ls) => ls.join('.')))
  .filter((h) => h.length <= 253 && !/^[0-9.]+$/.test(h));
const hostArb: fc.Arbitrary<{ host: string; inUrl: string }> = fc.oneof(
  dnsHostArb.map((h) => ({ host: h, inUrl: h })),
  fc.ipV4().map((h) => ({ host: h, inUrl: h })),
  fc.ipV6().map((h) => ({ host: h, inUrl: `[${h}]` })),
);
const portArb = fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined });
const segmentArb = fc.stringMatching(/^[A-Za-z0-9._~-]{1,12}$/);
const systemPathArb = fc
  .tuple(segmentArb.filter((s) => s !== '.' && s !== '..'), fc.boolean())
  .map(([id, trailing]) => `/redfish/v1/Systems/${id}${trailing ? '/' : ''}`);

const urlishArb = fc.oneof(
  fc.webUrl({ withQueryParameters: true, withFragments: true }),
  fc
    .tuple(
      fc.oneof(schemeArb, fc.stringMatching(/^[a-z+.-]{0,12}$/)),
      fc.constantFrom('://', ':', ':/', '', '//'),
      fc.option(fc.constantFrom('user:pw@', '@', ':@'), { nil: '' }),
      fc.oneof(fc.domain(), fc.ipV4(), fc.ipV4Extended(), fc.ipV6(), fc.ipV6().map((h) => `[${h}]`), fc.string()),
      fc.option(fc.oneof(fc.integer({ min: -10, max: 70000 }).map((p) => `:${p}`), fc.string().map((s) => `:${s}`)), { nil: '' }),
      fc.option(fc.oneof(systemPathArb, fc.string().map((s) => `/${s}`)), { nil: '' }),
    )
    .map((parts) => parts.join('')),
);

function checkResultShape(r: Result<BmcAccess>, field: string): void {
  if (r.ok) {
    expect(BMC_TYPES).toContain(r.value.type);
    expect(r.value.host.length).toBeGreaterThan(0);
    if (r.value.port !== undefined) {
      expect(Number.isInteger(r.value.port)).toBe(true);
      expect(r.value.port).toBeGreaterThanOrEqual(1);
      expect(r.value.port).toBeLessThanOrEqual(65535);
    }
  } else {
    expect(r.errors.length).toBeGreaterThan(0);
    for (const e of r.errors) {
      expect(e.field).toBe(field);
      expect(typeof e.reason).toBe('string');
      expect(e.reason.length).toBeGreaterThan(0);
    }
  }
}

describe('properties', () => {
  it('parse never throws for arbitrary strings and returns a well-formed result', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), urlishArb),
        (s) => {
          checkResultShape(parseBmcAddress(s), 'spec.bmc.address');
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('errors carry a caller-supplied field', () => {
    fc.assert(
      fc.property(urlishArb, fc.stringMatching(/^[a-z.]{1,20}$/), (s, field) => {
        checkResultShape(parseBmcAddress(s, field), field);
      }),
    );
  });

  it('accepted addresses contain no whitespace, userinfo, query or fragment', () => {
    fc.assert(
      fc.property(fc.oneof(urlishArb, fc.string({ unit: 'binary' })), (s) => {
        const r = parseBmcAddress(s);
        if (r.ok) {
          expect(s).not.toMatch(/[\s?#]|[^\x20-\x7e]/);
          expect(s.split('/').slice(0, 3).join('/')).not.toContain('@');
          expect(r.value.address).toBe(s);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('valid generated addresses parse and round-trip host, port and path', () => {
    fc.assert(
      fc.property(schemeArb, hostArb, portArb, systemPathArb, fc.boolean(), (scheme, h, port, path, upper) => {
        const type = parseBmcAddress(scheme === 'fake' ? 'fake://x' : scheme === 'ipmi' ? 'ipmi://x' : `${scheme}://x${SYS}`);
        if (!type.ok) throw new Error('sanity');
        const family = BMC_TYPE_TABLE[type.value.type].family;
        const usePort = family === 'fake' ? undefined : port;
        const usePath = family === 'redfish' ? path : '';
        const address = `${upper ? scheme.toUpperCase() : scheme}://${h.inUrl}${usePort === undefined ? '' : `:${usePort}`}${usePath}`;
        const a = mustParse(address);
        expect(a.address).toBe(address);
        expect(a.scheme).toBe(scheme);
        expect(a.host).toBe(h.host);
        expect(a.path).toBe(usePath);
        expect(a.port).toBe(usePort ?? (family === 'ipmi' ? 623 : undefined));
        expect(a.transport).toBe(family === 'redfish' ? (scheme.endsWith('+http') ? 'http' : 'https') : family);
        expect(a.interfaces).toEqual(BMC_TYPE_TABLE[a.type].interfaces);
        expect(a.capabilities).toEqual(BMC_TYPE_TABLE[a.type].capabilities);

        // The bare form is IPMI and agrees with ipmi://.
        if (family === 'ipmi') {
          const bare = mustParse(`${h.inUrl}${usePort === undefined ? '' : `:${usePort}`}`);
          expect([bare.type, bare.host, bare.port]).toEqual(['ipmi', a.host, a.port]);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('redfish addresses without a system path are always rejected', () => {
    const redfishSchemes = BMC_SCHEMES.filter((s) => s !== 'ipmi' && s !== 'fake');
    fc.assert(
      fc.property(fc.constantFrom(...redfishSchemes), hostArb, portArb, fc.constantFrom('', '/', '//', '/redfish/v1', '/redfish/v1/'), (scheme, h, port, path) => {
        const r = parseBmcAddress(`${scheme}://${h.inUrl}${port === undefined ? '' : `:${port}`}${path}`);
        const errors = mustFail(r);
        expect(errors[0]!.reason).toMatch(/system path|not a system/);
      }),
    );
  });

  it('a system path with a dot segment, percent-encoding or an extra segment anywhere is rejected', () => {
    const trick = fc.oneof(
      fc.constantFrom('.', '..', '%2e', '%2E%2E', '%2f', '%2F', '%5c', '%25'),
      segmentArb.map((s) => `${s}%${'2F'}${s}`),
      segmentArb, // one segment too many
    );
    fc.assert(
      fc.property(hostArb, fc.integer({ min: 0, max: 4 }), trick, (h, at, inserted) => {
        const segments = ['redfish', 'v1', 'Systems', '1'];
        segments.splice(at, 0, inserted);
        const errors = mustFail(parseBmcAddress(`redfish://${h.inUrl}/${segments.join('/')}`));
        expect(errors[0]!.reason).toContain('/redfish/v1/Systems/<id>');
      }),
    );
  });

  it('ports outside 1-65535 are rejected', () => {
    fc.assert(
      fc.property(hostArb, fc.oneof(fc.constant(0), fc.integer({ min: 65536, max: 10_000_000 })), (h, port) => {
        const errors = mustFail(parseBmcAddress(`ipmi://${h.inUrl}:${port}`));
        expect(errors[0]!.reason).toMatch(/out of range/);
      }),
    );
  });

  const hexOctet = fc.integer({ min: 0, max: 255 }).map((n) => n.toString(16).padStart(2, '0'));
  const octetsArb = fc.array(hexOctet, { minLength: 6, maxLength: 6 });

  it('normalizeMac accepts exactly the unicast, non-zero 6-octet forms and is idempotent', () => {
    fc.assert(
      fc.property(octetsArb, fc.constantFrom(':', '-'), fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }), (octets, sep, caps) => {
        const chars = octets.join('').split('').map((c, i) => (caps[i] ? c.toUpperCase() : c));
        const pairs = [0, 1, 2, 3, 4, 5].map((i) => chars.slice(i * 2, i * 2 + 2).join(''));
        const mac = pairs.join(sep);
        const r = normalizeMac(mac);
        const first = parseInt(octets[0]!, 16);
        const allZero = octets.every((o) => o === '00');
        const expectedOk = !allZero && (first & 1) === 0;
        expect(r.ok).toBe(expectedOk);
        if (r.ok) {
          expect(r.value).toBe(octets.join(':'));
          expect(normalizeMac(r.value)).toEqual(r);
        } else {
          expect(r.errors[0]!.field).toBe('spec.bootMACAddress');
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('normalizeMac only accepts strings of the 6-octet shape, and its output is a fixed point', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string({ unit: 'binary' }),
          fc.stringMatching(/^[0-9a-fA-F]{2}([:.-]?[0-9a-fA-F]{2}){4,7}$/),
          fc.mixedCase(fc.constantFrom('aa:bb:cc:dd:ee:ff', 'a2-bb-cc-dd-ee-f0', '52:54:00:12:34:56')),
        ),
        (s) => {
          const r = normalizeMac(s);
          if (r.ok) {
            expect(s).toMatch(/^[0-9a-f]{2}([:-])[0-9a-f]{2}(\1[0-9a-f]{2}){4}$/i);
            expect(r.value).toBe(s.toLowerCase().replace(/-/g, ':'));
            expect(normalizeMac(r.value)).toEqual(r);
          } else {
            expect(r.errors[0]!.reason.length).toBeGreaterThan(0);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('ironicDriverInfo exposes the password only under the *_password key', () => {
    const validAddress = fc
      .tuple(schemeArb, hostArb, portArb, systemPathArb)
      .map(([scheme, h, port, path]) => {
        if (scheme === 'fake') return `fake://${/^[0-9.]+$/.test(h.host) || h.host.includes(':') ? 'node' : h.host}`;
        const p = port === undefined ? '' : `:${port}`;
        return scheme === 'ipmi' ? `${scheme}://${h.inUrl}${p}` : `${scheme}://${h.inUrl}${p}${path}`;
      });
    // '#' can never occur in an accepted address, so any occurrence of the
    // password elsewhere would be a genuine leak, not a coincidence.
    const password = fc.string({ unit: 'binary' }).map((s) => `${s}#pw`);
    const username = fc.string().filter((u) => !u.includes('#'));
    fc.assert(
      fc.property(validAddress, username, password, fc.boolean(), (address, user, pw, insecure) => {
        const access = mustParse(address);
        const info = ironicDriverInfo(access, { username: user, password: pw }, { disableCertificateVerification: insecure });
        const holders = Object.entries(info).filter(([, v]) => String(v).includes(pw));
        if (access.type === 'fake') {
          expect(holders).toEqual([]);
          expect(info).toEqual({});
        } else {
          expect(holders).toHaveLength(1);
          expect(holders[0]![0]).toMatch(/_password$/);
          expect(holders[0]![1]).toBe(pw);
          const passwordKeys = Object.keys(info).filter((k) => k.endsWith('_password'));
          expect(passwordKeys).toEqual([holders[0]![0]]);
          for (const [k, v] of Object.entries(info)) {
            if (!k.endsWith('_password')) expect(JSON.stringify(v)).not.toContain(pw);
          }
        }
        for (const k of Object.keys(info)) expect(k).not.toContain(pw);
      }),
      { numRuns: 500 },
    );
  });
});
