/** BMC addresses: the scheme table and what parseBmcAddress accepts and refuses. */
import { describe, it, expect } from 'vitest';
import { BMC_SCHEMES, BMC_TYPES, BMC_TYPE_TABLE, parseBmcAddress } from '../../model/bmc';
import { mustParse, mustFail, reasonOf, SYS, REDFISH_TYPES } from '../support/bmc-address';

describe('BMC_SCHEMES', () => {
  it('lists every scheme exactly once: ipmi, libvirt, fake and three per redfish type', () => {
    expect(new Set(BMC_SCHEMES).size).toBe(BMC_SCHEMES.length);
    expect(BMC_SCHEMES).toHaveLength(3 + 3 * REDFISH_TYPES.length);
    expect(BMC_SCHEMES).toContain('ipmi');
    expect(BMC_SCHEMES).toContain('libvirt');
    expect(BMC_SCHEMES).toContain('fake');
    for (const t of REDFISH_TYPES) {
      expect(BMC_SCHEMES).toContain(t);
      expect(BMC_SCHEMES).toContain(`${t}+http`);
      expect(BMC_SCHEMES).toContain(`${t}+https`);
    }
    expect(BMC_SCHEMES).not.toContain('ipmi+http');
    expect(BMC_SCHEMES).not.toContain('libvirt+http');
  });

  it('every scheme parses to a type in the table', () => {
    for (const scheme of BMC_SCHEMES) {
      const addr = scheme === 'fake' ? 'fake://n' : scheme === 'ipmi' || scheme === 'libvirt' ? `${scheme}://h` : `${scheme}://h${SYS}`;
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
    expect(reasonOf('vbmc://10.0.0.1')).toContain('accepted schemes: ipmi, libvirt, redfish, redfish+http');
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

  it('query strings and fragments: only BMO\'s ?privilegelevel= on IPMI addresses', () => {
    expect(reasonOf(`redfish://h${SYS}?privilegelevel=OPERATOR`)).toMatch(/redfish addresses must not contain a query string/);
    expect(reasonOf('fake://n?x=1')).toMatch(/query string/);
    expect(reasonOf('ipmi://10.0.0.1?cipher=3')).toMatch(/unknown query parameter "cipher".*privilegelevel=<ADMINISTRATOR\|OPERATOR\|USER\|CALLBACK>/);
    expect(reasonOf('ipmi://10.0.0.1?privilegelevel=ROOT')).toMatch(/privilegelevel "ROOT" is not one Ironic accepts/);
    expect(reasonOf('ipmi://10.0.0.1?privilegelevel=USER&privilegelevel=USER')).toMatch(/given twice/);
    expect(reasonOf(`redfish://h${SYS}#frag`)).toMatch(/fragment/);
  });

  it('?privilegelevel= on IPMI addresses, as BMO reads it (value upper-cased), and libvirt:// as BMO\'s IPMI alias that needs a MAC', () => {
    expect(mustParse('ipmi://10.0.0.1?privilegelevel=OPERATOR')).toMatchObject({ type: 'ipmi', host: '10.0.0.1', port: 623, privilegeLevel: 'OPERATOR' });
    expect(mustParse('10.0.0.1:6230?privilegelevel=user')).toMatchObject({ type: 'ipmi', port: 6230, privilegeLevel: 'USER' });
    expect(mustParse('ipmi://10.0.0.1')).not.toHaveProperty('privilegeLevel');
    const v = mustParse('libvirt://192.168.122.1:6233?privilegelevel=ADMINISTRATOR');
    expect(v).toMatchObject({ type: 'libvirt', scheme: 'libvirt', transport: 'ipmi', driver: 'ipmi', port: 6233, path: '', privilegeLevel: 'ADMINISTRATOR' });
    expect(v.interfaces).toEqual(BMC_TYPE_TABLE.ipmi.interfaces);
    expect(v.capabilities).toEqual({ ...BMC_TYPE_TABLE.ipmi.capabilities, needsMAC: true });
    expect(reasonOf('libvirt://h/redfish/v1/Systems/1')).toMatch(/IPMI addresses take no path/);
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
