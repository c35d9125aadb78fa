/**
 * spec.dhcp / status.dhcp in Kubernetes mode, every peer real: the
 * kube-apiserver, the controller and a Kubernetes-mode worker (own
 * processes), Ironic, a site's dnsmasq in a network namespace
 * (scripts/dnsmasq.sh) and busybox udhcpc with the host's boot MAC in the
 * client namespace. The BareMetalHost's spec.dhcp reaches the workflow
 * through the controller, the reservation is written, the MAC gets it, and
 * the lease comes back on the object's status.dhcp.
 */
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomMac, uniq } from '../support/harness';
import { askLease, dhcpUnavailable, NO_LEASE_TRIES, startSite, stopSite, sweepStaleSites, type TestSite } from '../support/dnsmasq-site';
import { kubectl, waitFor } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const unavailable = dhcpUnavailable();
if (unavailable) console.warn(`Kubernetes DHCP tests skipped: ${unavailable}`);

const NET = '10.251.7';
const NS = uniq('mf-dhcp');
const LONG = 240_000;
let state = '';
let site: TestSite | undefined;

describe.skipIf(unavailable !== null)('spec.dhcp in Kubernetes mode (kube-apiserver, controller, dnsmasq, udhcpc)', () => {
  beforeAll(async () => {
    await sweepStaleSites();
    state = await mkdtemp(join(tmpdir(), 'metalflow-k8s-dhcp-'));
    await chmod(state, 0o755);
    site = await startSite(state, 'k', NET, 'ignore');
  });
  // Registered after the site's hook: the worker reads its sites when it starts.
  useShimSuite(NS, uniq('tq-dhcp'), { METALFLOW_DHCP_LEASE_CHECK_SECONDS: '1' }, () => ({
    METALFLOW_DHCP_SITES: `k=${join(state, 'dnsmasq', 'k')}`,
    METALFLOW_DHCP_LEASE_SECONDS: '3600',
  }));
  afterAll(async () => {
    if (site) await stopSite(state, site).catch((err: unknown) => console.error('stopping the DHCP site:', err));
    if (state) await rm(state, { recursive: true, force: true });
  });

  const apply = (doc: unknown) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc) });
  const get = (kind: string, name: string): any => {
    const r = kubectl(['get', kind, name, '-n', NS, '-o', 'json'], { check: false });
    return r.status === 0 ? JSON.parse(r.stdout) : undefined;
  };
  const dhcpStatus = (name: string): Record<string, unknown> | undefined => get('bmh', name)?.status?.dhcp;
  const hostFile = (name: string) => join(site!.hostsDir, `metalflow-${NS}_${name}`);

  it('a BareMetalHost with spec.dhcp.address gets its reservation, the MAC its lease, status.dhcp the lease; deleted, nothing', async () => {
    const name = 'dhcp-fixed';
    const mac = randomMac();
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'pw' }));
    apply(hostDoc(name, fakeHostSpec(name, { bootMACAddress: mac, dhcp: { site: 'k', address: `${NET}.11`, tags: ['provisioning'] } })));
    await waitFor('status.dhcp.reservedAddress', () => dhcpStatus(name)?.reservedAddress === `${NET}.11`, LONG);
    expect(await readFile(hostFile(name), 'utf8')).toBe(
      `# metalflow dhcp reservation host=${NS}/${name}\n${mac},set:provisioning,${NET}.11,${name}\n`,
    );
    expect(await askLease(site!, mac)).toBe(`${NET}.11`);
    await waitFor('the lease in status.dhcp', () => dhcpStatus(name)?.address === `${NET}.11`, LONG);
    const dhcp = dhcpStatus(name)!;
    expect(dhcp).toMatchObject({ site: 'k', reservedAddress: `${NET}.11`, address: `${NET}.11` });
    expect(Date.parse(String(dhcp.leaseExpiry))).toBeGreaterThan(Date.now());

    kubectl(['delete', 'bmh', name, '-n', NS, '--wait=false']);
    await waitFor('the host gone', () => get('bmh', name) === undefined, LONG);
    expect(await readFile(hostFile(name), 'utf8')).toBe(`# metalflow dhcp reservation host=${NS}/${name}\n${mac},set:metalflow-released\n`);
    expect(await askLease(site!, mac, NO_LEASE_TRIES)).toBeNull();
  }, LONG);

  it('a BareMetalHost with spec.dhcp.ipPool gets the IPPool\'s address over DHCP and status.dhcp.ipPool; deleted, the pool has it back', async () => {
    const pool = 'k8s-pool';
    apply({
      apiVersion: 'ipam.metal3.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name: pool },
      spec: { namePrefix: 'kp', pools: [{ start: `${NET}.50`, end: `${NET}.59` }], prefix: 24, gateway: `${NET}.1`, dnsServers: ['10.0.0.53'] },
    });
    const name = 'dhcp-pool';
    const mac = randomMac();
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'pw' }));
    apply(hostDoc(name, fakeHostSpec(name, { bootMACAddress: mac, dhcp: { site: 'k', ipPool: { name: pool } } })));
    await waitFor('the pool address in status.dhcp', () => dhcpStatus(name)?.reservedAddress !== undefined, LONG);
    expect(dhcpStatus(name)).toMatchObject({ site: 'k', reservedAddress: `${NET}.50`, ipPool: { name: pool, claim: name } });
    expect(await askLease(site!, mac)).toBe(`${NET}.50`);
    await waitFor('the lease in status.dhcp', () => dhcpStatus(name)?.address === `${NET}.50`, LONG);

    kubectl(['delete', 'bmh', name, '-n', NS, '--wait=false']);
    await waitFor('the host gone', () => get('bmh', name) === undefined, LONG);
    await waitFor('the claim gone from the pool', () => get('ippools.ipam.metal3.io', pool)?.status?.indexes?.[name] === undefined, LONG);
    expect(await askLease(site!, mac, NO_LEASE_TRIES)).toBeNull();
  }, LONG);
});
