/** The dnsmasq reservation file format and leases file, read and written without dnsmasq (test/dhcp runs the real one). */
import { describe, expect, it } from 'vitest';
import { fileNameFor, parseFile, renderFile } from '../../clients/dnsmasq/reservation-file';
import { parseLeases } from '../../clients/dnsmasq/leases';
import { validateReservation } from '../../model/dhcp';
import { loadDhcpSites } from '../../config/dhcp-sites';
import { createDhcpActivities } from '../../activities/dhcp/activities';

describe('reservation files', () => {
  it('renders a reservation, an ignore entry and released MACs, and reads each back', () => {
    const files = [
      { host: 'ns/a', reservation: { host: 'ns/a', mac: '02:00:00:00:00:01', ip: '10.0.0.5', hostname: 'a', tags: ['site-1', 'provisioning'] }, released: ['02:00:00:00:00:09'] },
      { host: 'ns/b', reservation: { host: 'ns/b', mac: '02:00:00:00:00:02', ignore: true }, released: [] },
      { host: 'ns/c', released: ['02:00:00:00:00:03'] },
    ];
    expect(renderFile(files[0]!)).toBe(
      '# metalflow dhcp reservation host=ns/a\n02:00:00:00:00:01,set:site-1,set:provisioning,10.0.0.5,a\n02:00:00:00:00:09,set:metalflow-released\n',
    );
    for (const f of files) expect(parseFile(renderFile(f))).toEqual(f);
    expect(fileNameFor('ns/a.b-c')).toBe('metalflow-ns_a.b-c');
  });

  it('does not read a file without the marker or with lines it did not write as its own', () => {
    expect(parseFile('02:00:00:00:00:01,10.0.0.5\n')).toBeNull();
    expect(parseFile('# metalflow dhcp reservation host=ns/a\n02:00:00:00:00:01,10.0.0.5\n02:00:00:00:00:02,10.0.0.6\n')).toBeNull();
    expect(parseFile('# metalflow dhcp reservation host=ns/a\nid:01:02,10.0.0.5\n')).toBeNull();
  });
});

describe('validateReservation', () => {
  it('normalizes the MAC and names each bad field with what is accepted', () => {
    const ok = validateReservation({ host: 'ns/a', mac: '02-00-00-00-00-0A', ip: '10.0.0.5', tags: ['x', 'x'] });
    expect(ok).toEqual({ ok: true, value: { host: 'ns/a', mac: '02:00:00:00:00:0a', ip: '10.0.0.5', tags: ['x'] } });
    const bad = validateReservation({ host: 'NS/a', mac: '01:00:00:00:00:01', hostname: 'a_b', tags: ['!known', 'a,b'] });
    expect(bad.ok ? [] : bad.errors.map((e) => e.field)).toEqual(['dhcp.host', 'dhcp.mac', 'dhcp.ip', 'dhcp.hostname', 'dhcp.tags[0]', 'dhcp.tags[1]']);
  });
});

describe('parseLeases', () => {
  it('reads IPv4 leases (infinite, no hostname, upper-case MAC) and skips the duid and IPv6 lines', () => {
    const text = [
      '1795466645 02:00:00:00:00:01 10.251.0.11 host-a 01:02:00:00:00:00:01',
      '0 02:00:00:00:00:02 10.251.0.12 * *',
      '1795466645 02:00:00:00:00:0A 10.251.0.13 * *',
      'duid 00:01:00:01:2c:aa:bb:cc',
      '1795466645 1234 fd00::5 * 00:01',
      '',
    ].join('\n');
    expect(parseLeases(text)).toEqual([
      { expiry: new Date(1795466645_000), mac: '02:00:00:00:00:01', ip: '10.251.0.11', hostname: 'host-a', clientId: '01:02:00:00:00:00:01' },
      { expiry: null, mac: '02:00:00:00:00:02', ip: '10.251.0.12', hostname: null, clientId: null },
      { expiry: new Date(1795466645_000), mac: '02:00:00:00:00:0a', ip: '10.251.0.13', hostname: null, clientId: null },
    ]);
  });
});

describe('METALFLOW_DHCP_SITES', () => {
  it('reads site=dir pairs into each site hosts dir and leases file, and refuses a malformed one by name', () => {
    expect(loadDhcpSites({})).toEqual({});
    expect(loadDhcpSites({ METALFLOW_DHCP_SITES: 'a=/s/dnsmasq/a, b=/s/dnsmasq/b', METALFLOW_DHCP_LEASE_SECONDS: '600' })).toEqual({
      a: { hostsDir: '/s/dnsmasq/a/hosts.d', leasesFile: '/s/dnsmasq/a/dnsmasq.leases', leaseTimeSeconds: 600 },
      b: { hostsDir: '/s/dnsmasq/b/hosts.d', leasesFile: '/s/dnsmasq/b/dnsmasq.leases', leaseTimeSeconds: 600 },
    });
    expect(() => loadDhcpSites({ METALFLOW_DHCP_SITES: 'a=relative/dir' })).toThrow('"a=relative/dir" is not <site>=<absolute dir>');
    expect(() => loadDhcpSites({ METALFLOW_DHCP_SITES: 'a=/x,a=/y' })).toThrow('site "a" is given twice');
    expect(() => loadDhcpSites({ METALFLOW_DHCP_SITES: 'a=/x', METALFLOW_DHCP_LEASE_SECONDS: '60' })).toThrow('METALFLOW_DHCP_LEASE_SECONDS');
  });
});

describe('DHCP activities without a dnsmasq', () => {
  it('a hosts dir that cannot be listed is Transient (retried), an unknown site is DhcpUnusable, no leases file means no lease', async () => {
    const dhcp = createDhcpActivities({ sites: { a: { hostsDir: '/nonexistent/metalflow/hosts.d', leasesFile: '/nonexistent/metalflow/dnsmasq.leases' } } });
    const reservation = { host: 'ns/a', mac: '02:00:00:00:00:01', ip: '10.0.0.5' };
    await expect(dhcp.reserveDhcp({ site: 'a', reservation })).rejects.toMatchObject({ type: 'Transient', nonRetryable: false, message: expect.stringContaining('ENOENT') });
    await expect(dhcp.reserveDhcp({ site: 'b', reservation })).rejects.toMatchObject({ type: 'DhcpUnusable', nonRetryable: true });
    expect(await dhcp.readDhcpLease({ site: 'a', mac: reservation.mac })).toBeNull();
  });
});
