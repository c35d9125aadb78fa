/**
 * spec.dhcp / status.dhcp in Kubernetes mode, every peer real: the
 * kube-apiserver, the controller and a Kubernetes-mode worker (own
 * processes), Ironic, a site's dnsmasq in a network namespace
 * (scripts/dnsmasq.sh) and busybox udhcpc with the host's boot MAC in the
 * client namespace. The BareMetalHost's spec.dhcp reaches the workflow
 * through the controller, the reservation is written, the MAC gets it, and
 * the lease comes back on the object's status.dhcp. A pool claim is an
 * IPClaim the host owns, with its IPAddress, allocated once (the pool
 * workflow is the one source of truth) and released when the host goes.
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

  const poolDoc = (name: string, prefix: string, first: number, last: number) => ({
    apiVersion: 'ipam.metal3.io/v1alpha1',
    kind: 'IPPool',
    metadata: { name },
    spec: { namePrefix: prefix, pools: [{ start: `${NET}.${first}`, end: `${NET}.${last}` }], prefix: 24, gateway: `${NET}.1`, dnsServers: ['10.0.0.53'] },
  });
  const list = (kind: string): any[] => JSON.parse(kubectl(['get', kind, '-n', NS, '-o', 'json']).stdout).items;

  it('a BareMetalHost with spec.dhcp.ipPool gets the address over DHCP, an IPClaim it owns and its IPAddress, one allocation; deleted, all released', async () => {
    const pool = 'k8s-pool';
    apply(poolDoc(pool, 'kp', 50, 59));
    const name = 'dhcp-pool';
    const mac = randomMac();
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'pw' }));
    apply(hostDoc(name, fakeHostSpec(name, { bootMACAddress: mac, dhcp: { site: 'k', ipPool: { name: pool } } })));
    await waitFor('the pool address in status.dhcp', () => dhcpStatus(name)?.reservedAddress !== undefined, LONG);
    expect(dhcpStatus(name)).toMatchObject({ site: 'k', reservedAddress: `${NET}.50`, ipPool: { name: pool, claim: name } });
    expect(await askLease(site!, mac)).toBe(`${NET}.50`);
    await waitFor('the lease in status.dhcp', () => dhcpStatus(name)?.address === `${NET}.50`, LONG);

    // The claim as Metal3's IPAM shows it: an IPClaim owned by the host, its IPAddress, the pool's index.
    const uid = get('bmh', name).metadata.uid;
    await waitFor("the host's IPClaim addressed", () => get('ipclaims.ipam.metal3.io', name)?.status?.address?.name !== undefined, LONG);
    const claim = get('ipclaims.ipam.metal3.io', name);
    expect(claim.metadata.ownerReferences).toEqual([{ apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', name, uid, blockOwnerDeletion: true }]);
    expect(claim.metadata.labels).toEqual({ 'metalflow.io/host': name });
    expect(claim.metadata.finalizers).toEqual(['ipclaim.ipam.metal3.io']);
    expect(claim.spec).toEqual({ pool: { name: pool, namespace: NS } });
    expect(claim.status.address.name).toBe('kp-10-251-7-50');
    const address = get('ipaddresses.ipam.metal3.io', 'kp-10-251-7-50');
    expect(address.spec).toMatchObject({ address: `${NET}.50`, prefix: 24, gateway: `${NET}.1`, pool: { name: pool }, claim: { name } });
    // One source of truth (the pool workflow, by claim name): the controller's allocation for the object is the host's own.
    await waitFor('the pool index', () => get('ippools.ipam.metal3.io', pool)?.status?.indexes?.[name] === `${NET}.50`, LONG);
    expect(get('ippools.ipam.metal3.io', pool).status.indexes).toEqual({ [name]: `${NET}.50` });
    expect(list('ipaddresses.ipam.metal3.io').filter((a) => a.spec.pool.name === pool).map((a) => a.spec.address)).toEqual([`${NET}.50`]);

    kubectl(['delete', 'bmh', name, '-n', NS, '--wait=false']);
    await waitFor('the host gone', () => get('bmh', name) === undefined, LONG);
    await waitFor('the IPClaim and IPAddress gone', () => get('ipclaims.ipam.metal3.io', name) === undefined && get('ipaddresses.ipam.metal3.io', 'kp-10-251-7-50') === undefined, LONG);
    await waitFor('the claim gone from the pool', () => get('ippools.ipam.metal3.io', pool)?.status?.indexes?.[name] === undefined, LONG);
    expect(await askLease(site!, mac, NO_LEASE_TRIES)).toBeNull();
  }, LONG);

  it("refuses an IPClaim of the host's name that the host does not own, and takes the pool address once it is gone", async () => {
    const pool = 'k8s-pool-2';
    apply(poolDoc(pool, 'kq', 60, 69));
    const name = 'dhcp-taken';
    apply({ apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPClaim', metadata: { name }, spec: { pool: { name: pool, namespace: NS } } });
    await waitFor('the manual claim addressed', () => get('ipclaims.ipam.metal3.io', name)?.status?.address?.name === 'kq-10-251-7-60', LONG);
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'pw' }));
    apply(hostDoc(name, fakeHostSpec(name, { dhcp: { site: 'k', ipPool: { name: pool } } })));
    await waitFor('the error on the host', () => String(get('bmh', name)?.status?.errorMessage ?? '').startsWith('DHCP reservation failed'), LONG);
    expect(get('bmh', name).status.errorMessage).toContain(`IPClaim ${NS}/${name} exists and is not this host's`);
    expect(get('bmh', name).status.dhcp).toBeUndefined();

    kubectl(['delete', 'ipclaims.ipam.metal3.io', name, '-n', NS, '--wait=false']);
    await waitFor('the host to claim once the manual claim is gone', () => dhcpStatus(name)?.reservedAddress === `${NET}.60`, LONG);
    expect(get('ipclaims.ipam.metal3.io', name).metadata.ownerReferences[0].kind).toBe('BareMetalHost');
  }, LONG);
});
