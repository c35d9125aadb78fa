/** Properties of the BMC address parser over generated addresses (fast-check). */
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { BMC_SCHEMES, BMC_TYPES, BMC_TYPE_TABLE, normalizeMac, parseBmcAddress, type BmcAccess } from '../../model/bmc';
import { ironicDriverInfo } from '../../clients/ironic/driver-info';
import type { Result } from '../../model/field-error';
import { mustParse, mustFail, SYS } from '../support/bmc-address';

const schemeArb = fc.constantFrom(...BMC_SCHEMES);
/** Schemes of the IPMI family: no path, port 623 by default. */
const IPMI_SCHEMES: readonly string[] = BMC_SCHEMES.filter((s) => BMC_TYPE_TABLE[s as keyof typeof BMC_TYPE_TABLE]?.family === 'ipmi');
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

  it('accepted addresses contain no whitespace, userinfo or fragment, and a query only as an IPMI privilege level', () => {
    fc.assert(
      fc.property(fc.oneof(urlishArb, fc.string({ unit: 'binary' })), (s) => {
        const r = parseBmcAddress(s);
        if (r.ok) {
          expect(s).not.toMatch(/[\s#]|[^\x20-\x7e]/);
          if (s.includes('?')) expect(r.value.privilegeLevel).toBeDefined();
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
        const type = parseBmcAddress(scheme === 'fake' ? 'fake://x' : IPMI_SCHEMES.includes(scheme) ? `${scheme}://x` : `${scheme}://x${SYS}`);
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
    const redfishSchemes = BMC_SCHEMES.filter((s) => !IPMI_SCHEMES.includes(s) && s !== 'fake');
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
        return IPMI_SCHEMES.includes(scheme) ? `${scheme}://${h.inUrl}${p}` : `${scheme}://${h.inUrl}${p}${path}`;
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
