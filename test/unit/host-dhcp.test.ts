/** spec.dhcp's validation and the network_data.json rendered from a pool address. */
import { describe, expect, it } from 'vitest';
import { validateHostSpec } from '../../model/validate';
import { netmaskOf, renderNetworkData } from '../../model/network-data';

const ref = { namespace: 'default', name: 'host-0' };
const base = { bmc: { address: 'ipmi://10.0.0.5', credentialsName: 'bmc' }, bootMACAddress: '52:54:00:00:00:01', online: true };
const errorsOf = (dhcp: unknown, spec: Record<string, unknown> = base) => {
  const r = validateHostSpec(ref, { ...spec, dhcp });
  return r.ok ? [] : r.errors;
};

describe('spec.dhcp validation', () => {
  it('accepts an address, a pool, or ignore', () => {
    expect(errorsOf({ address: '10.0.0.10', site: 'site-a', hostname: 'node0', tags: ['provisioning'] })).toEqual([]);
    expect(errorsOf({ ipPool: { name: 'pool1' } })).toEqual([]);
    expect(errorsOf({ ignore: true })).toEqual([]);
  });

  it('refuses each bad field, naming it and what is accepted', () => {
    expect(errorsOf({})).toEqual([{ field: 'spec.dhcp', reason: expect.stringContaining('exactly one of address') }]);
    expect(errorsOf({ address: '10.0.0.10', ipPool: { name: 'pool1' } })).toEqual([{ field: 'spec.dhcp', reason: expect.stringContaining('exactly one of address') }]);
    expect(errorsOf({ ignore: true, address: '10.0.0.10' })).toEqual([{ field: 'spec.dhcp.ignore', reason: expect.stringContaining('gets no address') }]);
    expect(errorsOf({ address: '10.0.0.300' })).toEqual([{ field: 'spec.dhcp.address', reason: expect.stringContaining('is not an IPv4 address') }]);
    expect(errorsOf({ address: '10.0.0.10', site: 'Site_A' })).toEqual([{ field: 'spec.dhcp.site', reason: expect.stringContaining('is not a site name') }]);
    expect(errorsOf({ ipPool: { name: 'Pool!' } })).toEqual([{ field: 'spec.dhcp.ipPool.name', reason: expect.stringContaining('is not an IPPool name') }]);
    expect(errorsOf({ address: '10.0.0.10', hostname: 'bad_name' })).toEqual([{ field: 'spec.dhcp.hostname', reason: expect.stringContaining('is not a hostname') }]);
    expect(errorsOf({ address: '10.0.0.10', tags: ['a,b'] })).toEqual([{ field: 'spec.dhcp.tags[0]', reason: expect.stringContaining('is not a dnsmasq tag') }]);
    const { bootMACAddress: _, ...noMac } = base;
    expect(errorsOf({ address: '10.0.0.10' }, { ...noMac, bmc: { address: 'redfish://10.0.0.5/redfish/v1/Systems/1', credentialsName: 'bmc' } })).toEqual([
      { field: 'spec.bootMACAddress', reason: expect.stringContaining('required with spec.dhcp') },
    ]);
    expect(errorsOf({ address: '10.0.0.10', extra: 1 })[0]?.field).toMatch(/^spec\.dhcp/);
  });
});

describe('network_data.json from a pool address', () => {
  it('netmasks in both families', () => {
    expect(netmaskOf('10.0.0.1', 24)).toBe('255.255.255.0');
    expect(netmaskOf('10.0.0.1', 0)).toBe('0.0.0.0');
    expect(netmaskOf('10.0.0.1', 32)).toBe('255.255.255.255');
    expect(netmaskOf('fd00::1', 64)).toBe('ffff:ffff:ffff:ffff::');
    expect(netmaskOf('fd00::1', 0)).toBe('::');
    expect(netmaskOf('fd00::1', 128)).toBe('ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff');
  });

  it("uses Metal3DataTemplate's field names; no gateway, no route; no prefix, no netmask", () => {
    expect(renderNetworkData({ mac: '52:54:00:00:00:01', pool: 'p', address: 'fd00::5', prefix: 64 })).toEqual({
      links: [{ id: 'boot', type: 'phy', ethernet_mac_address: '52:54:00:00:00:01' }],
      networks: [{ id: 'p', type: 'ipv6', link: 'boot', ip_address: 'fd00::5', netmask: 'ffff:ffff:ffff:ffff::', routes: [] }],
      services: [],
    });
    const v4 = renderNetworkData({ mac: '52:54:00:00:00:01', pool: 'p', address: '10.0.0.5', gateway: '10.0.0.1' });
    expect(v4.networks).toEqual([{ id: 'p', type: 'ipv4', link: 'boot', ip_address: '10.0.0.5', routes: [{ network: '0.0.0.0', netmask: '0.0.0.0', gateway: '10.0.0.1' }] }]);
  });
});
