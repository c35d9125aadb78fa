/**
 * spec.dhcp through the host workflow, with real peers: hosts enrolled
 * through the API's host service on the real Ironic (fake-hardware), their
 * reservations written into a real dnsmasq (scripts/dnsmasq.sh, in a network
 * namespace), a real DHCP client (busybox udhcpc) in the client namespace
 * with the host's boot MAC; the lease read back into status.dhcp; the
 * reservation gone once the host is deleted. A host whose address comes from
 * an IPPool gets network_data.json rendered from it in the config drive sent
 * to Ironic (recorded by the Ironic proxy).
 */
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostWorkflowId } from '../../model/host-ref';
import type { HostSpec } from '../../model/host';
import { hostViewQuery, type HostView } from '../../contracts/host';
import { IpPools } from '../../control/ip-pools';
import { FAST_HOST_OPTIONS, randomMac, uniq, waitFor } from '../support/harness';
import { useProxiedHarness } from '../support/proxied-harness';
import { isDeploy } from '../../bench/support/ironic-proxy';
import { askLease, dhcpUnavailable, NO_LEASE_TRIES, startSite, stopSite, sweepStaleSites, type TestSite } from '../support/dnsmasq-site';

const unavailable = dhcpUnavailable();
if (unavailable) console.warn(`DHCP host tests skipped: ${unavailable}`);

const NET = '10.251.4';
let state = '';
let site: TestSite | undefined;
const sites: Record<string, TestSite> = {};

describe.skipIf(unavailable !== null)('spec.dhcp: reservations written by the host workflow (real dnsmasq, udhcpc, Ironic)', () => {
  beforeAll(async () => {
    await sweepStaleSites();
    state = await mkdtemp(join(tmpdir(), 'metalflow-host-dhcp-'));
    await chmod(state, 0o755);
    site = { name: 'h', netns: `mft${process.pid}-h`, net: NET, hostsDir: '', leasesFile: '' };
    site = await startSite(state, 'h', NET, 'ignore');
    sites.h = site;
  });
  // Started after the site, so the worker's sites are known (the harness reads them once).
  const suite = useProxiedHarness({ dhcpSites: sites, hostOptions: { ...FAST_HOST_OPTIONS, dhcpLeaseCheckSeconds: 1 } });
  afterAll(async () => {
    if (site) await stopSite(state, site).catch((err: unknown) => console.error('stopping the DHCP site:', err));
    if (state) await rm(state, { recursive: true, force: true });
  });

  const NS = 'dhcp';
  const enroll = async (spec: Omit<HostSpec, 'bmc' | 'online'>) => {
    const { h } = suite;
    const ref = { namespace: NS, name: uniq('dh') };
    await h.hosts.put(ref, {
      spec: { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, online: true, ...spec },
      credentials: { username: 'admin', password: 'pw' },
    });
    const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
    return { ref, handle, view: (): Promise<HostView> => handle.query(hostViewQuery) };
  };

  it('a host enrolled with an address gets it from its site\'s dnsmasq, its lease in status.dhcp; deleted, its MAC gets nothing', async () => {
    const mac = randomMac();
    const { ref, handle, view } = await enroll({ bootMACAddress: mac, dhcp: { site: 'h', address: `${NET}.11`, tags: ['provisioning'] } });
    await waitFor('the reservation', async () => (await view()).status.dhcp?.reservedAddress === `${NET}.11`);
    const file = await readFile(join(site!.hostsDir, `metalflow-${NS}_${ref.name}`), 'utf8');
    expect(file).toBe(`# metalflow dhcp reservation host=${NS}/${ref.name}\n${mac},set:provisioning,${NET}.11,${ref.name}\n`);
    expect(await askLease(site!, mac)).toBe(`${NET}.11`);
    const withLease = await waitFor('the lease in status.dhcp', async () => {
      const v = await view();
      return v.status.dhcp?.address === `${NET}.11` ? v : undefined;
    });
    expect(withLease.status.dhcp).toMatchObject({ site: 'h', reservedAddress: `${NET}.11`, address: `${NET}.11` });
    expect(Date.parse(withLease.status.dhcp?.leaseExpiry ?? '')).toBeGreaterThan(Date.now());
    await waitFor('available', async () => (await view()).status.provisioning.state === 'available');

    await suite.h.hosts.remove(ref);
    await handle.result();
    expect(await readFile(join(site!.hostsDir, `metalflow-${NS}_${ref.name}`), 'utf8')).toBe(
      `# metalflow dhcp reservation host=${NS}/${ref.name}\n${mac},set:metalflow-released\n`,
    );
    expect(await askLease(site!, mac, NO_LEASE_TRIES)).toBeNull();
  });

  it('a host with an IPPool reference claims an address, gets it over DHCP and in the config drive\'s network_data; deleted, the address goes back to the pool', async () => {
    const { h, proxy } = suite;
    const pools = new IpPools({ client: h.client, taskQueue: h.taskQueue });
    const pool = { namespace: NS, name: uniq('pool') };
    await pools.apply(pool, { namePrefix: 'p', pools: [{ start: `${NET}.50`, end: `${NET}.59` }], prefix: 24, gateway: `${NET}.1`, dnsServers: ['10.0.0.53'] });
    const mac = randomMac();
    const { ref, handle, view } = await enroll({ bootMACAddress: mac, dhcp: { site: 'h', ipPool: { name: pool.name } } });
    const reserved = await waitFor('the pool address', async () => (await view()).status.dhcp?.reservedAddress);
    expect(reserved).toBe(`${NET}.50`);
    expect((await view()).status.dhcp?.ipPool).toEqual({ name: pool.name, claim: ref.name });
    expect((await pools.claim(pool, ref.name))?.address).toBe(reserved);
    expect(await askLease(site!, mac)).toBe(reserved);

    await waitFor('available', async () => (await view()).status.provisioning.state === 'available');
    await h.hosts.setImage(ref, { url: 'http://127.0.0.1/images/demo.qcow2', checksum: 'b'.repeat(64), checksumType: 'sha256', format: 'qcow2' });
    await waitFor('provisioned', async () => (await view()).status.provisioning.state === 'provisioned', { timeoutMs: 120_000 });
    const nodeId = (await view()).status.provisioning.ID;
    const deploy = proxy.requests.find((r) => r.path.includes(nodeId) && isDeploy(r));
    const body = JSON.parse(deploy?.body ?? '{}') as { configdrive?: { network_data?: unknown } };
    expect(body.configdrive?.network_data).toEqual({
      links: [{ id: 'boot', type: 'phy', ethernet_mac_address: mac }],
      networks: [
        {
          id: pool.name,
          type: 'ipv4',
          link: 'boot',
          ip_address: reserved,
          netmask: '255.255.255.0',
          routes: [{ network: '0.0.0.0', netmask: '0.0.0.0', gateway: `${NET}.1`, services: [{ type: 'dns', address: '10.0.0.53' }] }],
          services: [{ type: 'dns', address: '10.0.0.53' }],
        },
      ],
      services: [{ type: 'dns', address: '10.0.0.53' }],
    });

    await h.hosts.remove(ref);
    await handle.result();
    expect(await pools.claim(pool, ref.name)).toBeNull();
    expect(await askLease(site!, mac, NO_LEASE_TRIES)).toBeNull();
  });

  it('a reservation that cannot be written is an error on the host, which does not enroll until it can', async () => {
    const { view } = await enroll({ bootMACAddress: randomMac(), dhcp: { site: 'nowhere', address: `${NET}.12` } });
    const v = await waitFor('the DHCP error', async () => {
      const x = await view();
      return x.status.errorMessage.startsWith('DHCP reservation failed') ? x : undefined;
    });
    expect(v.status.errorMessage).toContain('no dnsmasq for site "nowhere" (sites: h)');
    expect(v.status.provisioning.state).toBe('');
    expect(v.operations).toEqual([]);
  });
});
