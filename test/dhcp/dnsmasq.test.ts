/**
 * DHCP reservations with real peers: dnsmasq 2.90 (scripts/dnsmasq.sh) in a
 * network namespace per site, busybox udhcpc in each site's client namespace
 * with the host's MAC set on its veth. Three sites: a and b give unknown MACs
 * nothing, p gives them a pool address (<net>.100-199).
 */
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDhcpActivities } from '../../activities/dhcp/activities';
import { FAILURE } from '../../model/failures';
import { waitFor } from '../support/harness';
import { alive, askLease, dhcpUnavailable, NO_LEASE_TRIES, restartSite, startSite, stopSite, sweepStaleSites, type TestSite } from '../support/dnsmasq-site';

const unavailable = dhcpUnavailable();
if (unavailable) console.warn(`DHCP tests skipped: ${unavailable}`);

describe.skipIf(unavailable !== null)('DHCP reservations in dnsmasq (real dnsmasq and udhcpc in network namespaces)', () => {
  let state = '';
  const sites: TestSite[] = [];
  let a: TestSite;
  let b: TestSite;
  let p: TestSite;
  let dhcp: ReturnType<typeof createDhcpActivities>;

  beforeAll(async () => {
    await sweepStaleSites();
    state = await mkdtemp(join(tmpdir(), 'metalflow-dhcp-'));
    // dnsmasq reads the reservation files as its own user.
    await chmod(state, 0o755);
    for (const [name, net, unknown] of [['a', '10.251.1', 'ignore'], ['b', '10.251.2', 'ignore'], ['p', '10.251.3', 'pool']] as const) {
      // Listed before it starts, so afterAll deletes the namespaces of a start that failed half-way.
      sites.push({ name, netns: `mft${process.pid}-${name}`, net, hostsDir: '', leasesFile: '' });
      sites[sites.length - 1] = await startSite(state, name, net, unknown);
    }
    [a, b, p] = sites as [TestSite, TestSite, TestSite];
    dhcp = createDhcpActivities({ sites: Object.fromEntries(sites.map((s) => [s.name, s])) });
  });

  afterAll(async () => {
    for (const s of sites) await stopSite(state, s).catch((err: unknown) => console.error(`stopping DHCP site ${s.name}:`, err));
    if (state) await rm(state, { recursive: true, force: true });
  });

  it('gives the reserved MAC its address and hostname, an unknown MAC nothing, and reads the lease back into status.dhcp', async () => {
    const reservation = { host: 'default/host-1', mac: '02:00:00:00:01:01', ip: '10.251.1.11', hostname: 'host-1', tags: ['site-a', 'provisioning'] };
    expect(await dhcp.reserveDhcp({ site: 'a', reservation })).toEqual({ outcome: 'written' });
    expect(await dhcp.readDhcpLease({ site: 'a', mac: reservation.mac })).toBeNull();
    const before = Date.now();
    expect(await askLease(a, reservation.mac)).toBe('10.251.1.11');
    const status = await dhcp.readDhcpLease({ site: 'a', mac: '02-00-00-00-01-01' });
    expect(status?.address).toBe('10.251.1.11');
    const expiry = Date.parse(status?.leaseExpiry ?? '');
    // dnsmasq writes whole seconds: the lease ends one lease time after it was taken.
    expect(expiry).toBeGreaterThan(before + 3000_000);
    expect(Date.parse(status?.lastSeen ?? '')).toBeGreaterThanOrEqual(before - 1000);
    expect(await readFile(a.leasesFile, 'utf8')).toMatch(/ 02:00:00:00:01:01 10\.251\.1\.11 host-1 /);

    expect(await askLease(a, '02:00:00:00:01:99', NO_LEASE_TRIES)).toBeNull();
    expect(await dhcp.readDhcpLease({ site: 'a', mac: '02:00:00:00:01:99' })).toBeNull();
  });

  it('writes the same reservation twice once, and a changed address takes effect without a reload', async () => {
    const reservation = { host: 'default/host-2', mac: '02:00:00:00:01:02', ip: '10.251.1.12', hostname: 'host-2' };
    await dhcp.reserveDhcp({ site: 'a', reservation });
    const file = join(a.hostsDir, 'metalflow-default_host-2');
    const first = await stat(file);
    expect(await dhcp.reserveDhcp({ site: 'a', reservation: { ...reservation, mac: '02:00:00:00:01:02'.toUpperCase() } })).toEqual({ outcome: 'unchanged' });
    expect((await stat(file)).mtimeMs).toBe(first.mtimeMs);
    expect(await askLease(a, reservation.mac)).toBe('10.251.1.12');

    await dhcp.reserveDhcp({ site: 'a', reservation: { ...reservation, ip: '10.251.1.22' } });
    expect(await askLease(a, reservation.mac)).toBe('10.251.1.22');
  });

  it('a released reservation no longer gives the MAC its address (nothing, or a pool address on a pool site)', async () => {
    const onA = { host: 'default/host-3', mac: '02:00:00:00:01:03', ip: '10.251.1.13' };
    await dhcp.reserveDhcp({ site: 'a', reservation: onA });
    expect(await askLease(a, onA.mac)).toBe('10.251.1.13');
    expect(await dhcp.releaseDhcp({ site: 'a', host: onA.host })).toEqual({ outcome: 'written' });
    expect(await dhcp.releaseDhcp({ site: 'a', host: onA.host })).toEqual({ outcome: 'unchanged' });
    expect(await askLease(a, onA.mac, NO_LEASE_TRIES)).toBeNull();

    const onP = { host: 'default/host-4', mac: '02:00:00:00:03:04', ip: '10.251.3.14' };
    expect(await askLease(p, onP.mac)).toMatch(/^10\.251\.3\.1\d\d$/);
    await dhcp.reserveDhcp({ site: 'p', reservation: onP });
    expect(await askLease(p, onP.mac)).toBe('10.251.3.14');
    await dhcp.releaseDhcp({ site: 'p', host: onP.host });
    expect(await askLease(p, onP.mac)).toMatch(/^10\.251\.3\.1\d\d$/);
    // Reserved again, the MAC gets its address back once dnsmasq restarts: until then it
    // refuses the entry, as its old (released) entry for the address still holds it.
    await dhcp.reserveDhcp({ site: 'p', reservation: onP });
    expect(await askLease(p, onP.mac)).toMatch(/^10\.251\.3\.1\d\d$/);
    await restartSite(state, p, 'pool');
    expect(await askLease(p, onP.mac)).toBe('10.251.3.14');
    expect(await dhcp.releaseDhcp({ site: 'p', host: 'default/never-reserved' })).toEqual({ outcome: 'absent' });
  });

  it('an ignore reservation gets the MAC nothing, even where unknown MACs get a pool address', async () => {
    await dhcp.reserveDhcp({ site: 'p', reservation: { host: 'default/no-pxe', mac: '02:00:00:00:03:05', ignore: true } });
    expect(await askLease(p, '02:00:00:00:03:05', NO_LEASE_TRIES)).toBeNull();
    expect(await askLease(p, '02:00:00:00:03:06')).toMatch(/^10\.251\.3\.1\d\d$/);
  });

  it("goes only to the host's site's dnsmasq", async () => {
    const reservation = { host: 'default/host-b', mac: '02:00:00:00:02:01', ip: '10.251.2.21', hostname: 'host-b' };
    await dhcp.reserveDhcp({ site: 'b', reservation });
    expect(await askLease(b, reservation.mac)).toBe('10.251.2.21');
    expect(await askLease(a, reservation.mac, NO_LEASE_TRIES)).toBeNull();
    expect(await dhcp.readDhcpLease({ site: 'a', mac: reservation.mac })).toBeNull();
    expect((await dhcp.readDhcpLease({ site: 'b', mac: reservation.mac }))?.address).toBe('10.251.2.21');
  });

  it('a new boot MAC takes over the address: the old MAC gets nothing at once, the new one (at the latest) once dnsmasq restarts', async () => {
    // The old NIC never took a lease: one it had would keep the address from the new MAC until it ended.
    const before = { host: 'default/nic-swap', mac: '02:00:00:00:02:02', ip: '10.251.2.22' };
    await dhcp.reserveDhcp({ site: 'b', reservation: before });
    await dhcp.reserveDhcp({ site: 'b', reservation: { ...before, mac: '02:00:00:00:02:03' } });
    expect(await readFile(join(b.hostsDir, 'metalflow-default_nic-swap'), 'utf8')).toBe(
      '# metalflow dhcp reservation host=default/nic-swap\n02:00:00:00:02:03,10.251.2.22\n02:00:00:00:02:02,set:metalflow-released\n',
    );
    expect(await askLease(b, before.mac, NO_LEASE_TRIES)).toBeNull();
    // Whether the new MAC gets the address before the restart depends on whether dnsmasq read
    // the first version of the file (its entry then holds the address) or both writes at once.
    await restartSite(state, b, 'ignore');
    expect(await askLease(b, '02:00:00:00:02:03')).toBe('10.251.2.22');
    expect(await askLease(b, before.mac, NO_LEASE_TRIES)).toBeNull();
  });

  it('a dnsmasq that dies is started again by the script\'s supervisor, with its reservations and leases', async () => {
    const reservation = { host: 'default/survivor', mac: '02:00:00:00:02:09', ip: '10.251.2.29' };
    await dhcp.reserveDhcp({ site: 'b', reservation });
    expect(await askLease(b, reservation.mac)).toBe('10.251.2.29');
    const pidFile = join(state, 'dnsmasq', 'b', 'dnsmasq.pid');
    const killed = Number(await readFile(pidFile, 'utf8'));
    process.kill(killed, 'SIGKILL');
    const restarted = await waitFor('dnsmasq started again', async () => {
      const pid = Number(await readFile(pidFile, 'utf8').catch(() => '0'));
      return pid !== killed && pid > 0 && alive(pid) ? pid : undefined;
    });
    expect(restarted).not.toBe(killed);
    expect(await askLease(b, reservation.mac)).toBe('10.251.2.29');
    expect((await dhcp.readDhcpLease({ site: 'b', mac: reservation.mac }))?.address).toBe('10.251.2.29');
  });

  it('refuses a MAC or address held by another host, an unknown site, and a file metalflow did not write, changing nothing', async () => {
    const held = { host: 'default/holder', mac: '02:00:00:00:01:07', ip: '10.251.1.17' };
    await dhcp.reserveDhcp({ site: 'a', reservation: held });
    await expect(dhcp.reserveDhcp({ site: 'a', reservation: { ...held, host: 'default/other' } })).rejects.toMatchObject({
      type: FAILURE.dhcpUnusable,
      nonRetryable: true,
      message: expect.stringContaining('reserved for default/holder'),
    });
    await expect(dhcp.reserveDhcp({ site: 'a', reservation: { host: 'default/other', mac: '02:00:00:00:01:08', ip: held.ip } })).rejects.toMatchObject({
      message: expect.stringContaining(`address ${held.ip} is reserved for default/holder`),
    });
    await expect(dhcp.reserveDhcp({ site: 'a', reservation: { host: 'default/other', mac: '02:00:00:00:01:08', ip: '10.251.1.300' } })).rejects.toMatchObject({
      message: expect.stringContaining('dhcp.ip: "10.251.1.300" is not an IPv4 address'),
    });
    await expect(dhcp.reserveDhcp({ site: 'nowhere', reservation: held })).rejects.toMatchObject({ message: expect.stringContaining('no dnsmasq for site "nowhere" (sites: a, b, p)') });

    const foreign = join(a.hostsDir, 'metalflow-default_foreign');
    await writeFile(foreign, '02:00:00:00:01:09,10.251.1.19\n');
    await expect(dhcp.releaseDhcp({ site: 'a', host: 'default/foreign' })).rejects.toMatchObject({ message: expect.stringContaining('was not written by metalflow') });
    expect(await readFile(foreign, 'utf8')).toBe('02:00:00:00:01:09,10.251.1.19\n');
  });
});
