/**
 * A `direct` host whose address comes from an IPPool (spec.dhcp.ipPool,
 * patch direct-pool-network-data): its config drive, built by the worker
 * and inserted in the USB slot of a sushy-tools of this file's own, holds
 * network_data.json rendered from the pool's address, gateway and DNS
 * servers (read back with isoinfo); that data and the drive's URL are
 * nowhere in the host's history.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostRef, HostSpec } from '../../model/host';
import type { HostView } from '../../contracts/host';
import { hostWorkflowId } from '../../model/host-ref';
import { IpPools } from '../../control/ip-pools';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { startImageServer, type ImageServer } from '../support/image-server';
import { startTestImageCache, type TestImageCache } from '../support/image-cache';
import { unusedPort } from '../support/ports';
import { resetRedfishSystem } from '../support/redfish-system';
import { sushyState } from '../support/sushy-state';
import { secretsInHistories } from '../../bench/support/history-secrets';
import { tinyIso } from '../../bench/support/bmc-files';
import { ownSushy } from '../bmc/support/sushy';
import { sha256, withConfigDriveIso } from '../support/config-drive-iso';

const NS = 'direct-pool';
const SYSTEM = '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000005';
const ISO = tinyIso();

let dhcpDir = '';
let h: Harness;
let cache: TestImageCache;
let origin: ImageServer;
let sushy: ReturnType<typeof ownSushy>;

beforeAll(async () => {
  origin = await startImageServer({ '/os/live.iso': { body: ISO } });
  cache = await startTestImageCache();
  sushy = ownSushy('direct-pool-sushy', await unusedPort());
  sushy.start();
  // The reservation goes to a plain folder: no dnsmasq is needed to write it, and none to test the drive.
  dhcpDir = mkdtempSync(join(tmpdir(), 'metalflow-direct-pool-dhcp-'));
  h = await startHarness({
    hostOptions: { ...FAST_HOST_OPTIONS, dhcpLeaseCheckSeconds: 0 },
    imageCache: cache.served,
    configDrives: cache.configDrives,
    dhcpSites: { p: { hostsDir: dhcpDir, leasesFile: join(dhcpDir, 'leases') } },
  });
});

afterAll(async () => {
  await h?.close();
  sushy?.stop();
  await cache?.close();
  await origin?.close();
  if (dhcpDir) rmSync(dhcpDir, { recursive: true, force: true });
});

const view = async (ref: HostRef): Promise<HostView> => (await h.hosts.get(ref)) as HostView;
const settle = <T>(what: string, probe: () => Promise<T | undefined | false>) => waitFor(what, probe, { timeoutMs: 300_000, intervalMs: 500 });

describe('the direct provisioner with a pool address', { timeout: 600_000 }, () => {
  it("boots a direct host with network_data.json rendered from its IPPool address in the config drive, kept out of history", async () => {
    const pools = new IpPools({ client: h.client, taskQueue: h.taskQueue });
    const pool = { namespace: NS, name: uniq('pool') };
    await pools.apply(pool, { namePrefix: 'dp', pools: [{ start: '10.253.0.40', end: '10.253.0.49' }], prefix: 26, gateway: '10.253.0.1', dnsServers: ['10.253.0.53', '10.253.0.54'] });

    const address = `redfish-virtualmedia+${sushy.url}${SYSTEM}`;
    await resetRedfishSystem(address);
    const ref = { namespace: NS, name: uniq('dp') };
    const mac = randomMac();
    const spec: HostSpec = { bmc: { address, credentialsName: `${ref.name}-bmc` }, online: true, provisioner: 'direct', bootMACAddress: mac, dhcp: { site: 'p', ipPool: { name: pool.name } } };
    await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'password' } });
    await settle('available', async () => {
      const v = await view(ref);
      return v.status.provisioning.state === 'available' && !v.currentOperation ? v : undefined;
    });
    expect((await view(ref)).status.dhcp).toMatchObject({ reservedAddress: '10.253.0.40', ipPool: { name: pool.name, claim: ref.name } });

    await h.hosts.setImage(ref, { url: origin.url('/os/live.iso'), format: 'live-iso', checksum: sha256(ISO), checksumType: 'sha256' });
    await settle('provisioned', async () => {
      const v = await view(ref);
      return v.status.provisioning.state === 'provisioned' && !v.currentOperation ? v : undefined;
    });
    const usb = await sushyState(sushy.url, SYSTEM, ['USBStick', 'Floppy']);
    expect(usb.inserted).toBe(true);
    const driveUrl = usb.image ?? '';
    expect(driveUrl).toMatch(new RegExp(`^${cache.server.boundUrl}/configdrive/`));

    await withConfigDriveIso(driveUrl, ({ volumeId, files, read }) => {
      expect(volumeId).toBe('config-2');
      // No user data was given: meta data and the rendered network data only.
      expect(files).toEqual(['/openstack', '/openstack/latest', '/openstack/latest/meta_data.json', '/openstack/latest/network_data.json']);
      const dns = [
        { type: 'dns', address: '10.253.0.53' },
        { type: 'dns', address: '10.253.0.54' },
      ];
      expect(JSON.parse(read('/openstack/latest/network_data.json'))).toEqual({
        links: [{ id: 'boot', type: 'phy', ethernet_mac_address: mac }],
        networks: [
          {
            id: pool.name,
            type: 'ipv4',
            link: 'boot',
            ip_address: '10.253.0.40',
            netmask: '255.255.255.192',
            routes: [{ network: '0.0.0.0', netmask: '0.0.0.0', gateway: '10.253.0.1', services: dns }],
            services: dns,
          },
        ],
        services: dns,
      });
      expect(JSON.parse(read('/openstack/latest/meta_data.json'))).toMatchObject({ 'metal3-namespace': NS, 'metal3-name': ref.name });
    });

    await h.hosts.remove(ref);
    await waitFor('deleted', async () => (await h.hosts.get(ref).then(() => false, () => true)) || undefined, { timeoutMs: 120_000 });
    expect((await sushyState(sushy.url, SYSTEM, ['USBStick', 'Floppy'])).inserted).toBe(false);
    expect(await pools.claim(pool, ref.name)).toBeNull();
    // The rendered document never entered history (the allocation does, as status.dhcp shows it).
    const { hits } = await secretsInHistories(h.client, [hostWorkflowId(ref)], [new URL(driveUrl).pathname, '255.255.255.192']);
    expect(hits).toEqual([]);
  });
});
