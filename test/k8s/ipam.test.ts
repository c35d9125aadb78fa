/**
 * Metal3 IPAM in Kubernetes mode on a real kube-apiserver: Metal3's own
 * example manifest applied unchanged gets its IPAddress; concurrent claims
 * get distinct addresses; a full pool is the claim's errorMessage until a
 * deleted claim's address is released (its IPAddress deleted first); a pool
 * in use stays until its claims are gone.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../../config/env';
import { uniq } from '../support/harness';
import { kubectl, waitFor } from './kube-harness';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-ipam');
useShimSuite(NS, uniq('tq-ipam'));
const LONG = 180_000;

const get = (kind: string, name: string): any => {
  const r = kubectl(['get', kind, name, '-n', NS, '-o', 'json'], { check: false });
  return r.status === 0 ? JSON.parse(r.stdout) : undefined;
};
const list = (kind: string): any[] => JSON.parse(kubectl(['get', kind, '-n', NS, '-o', 'json']).stdout).items;
const apply = (docs: unknown[]) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: docs }) });
const claimDoc = (name: string, pool: string) => ({ apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPClaim', metadata: { name }, spec: { pool: { name: pool, namespace: NS } } });
const addressOf = (claim: string): string | undefined => get('ipclaims.ipam.metal3.io', claim)?.status?.address?.name;

describe('Metal3 IPAM objects', () => {
  it("applies Metal3's example unchanged and gives its claim an IPAddress", async () => {
    const text = readFileSync(join(REPO_ROOT, 'test', 'k8s', 'fixtures', 'metal3-ipam-example.yaml'), 'utf8').replaceAll('${NAMESPACE}', NS);
    const docs = parseAllDocuments(text).map((d) => d.toJS() as { apiVersion: string; kind: string }).filter(Boolean);
    // Cluster API's IPAddressClaim (ipam.cluster.x-k8s.io) is not Metal3 IPAM's own API and is not served here.
    const ours = docs.filter((d) => d.apiVersion !== 'ipam.cluster.x-k8s.io/v1beta2');
    expect(ours.map((d) => d.kind)).toEqual(['Namespace', 'IPPool', 'IPClaim']);
    apply(ours);
    await waitFor('the example claim to get its address', () => addressOf('provisioning-pool') !== undefined, LONG);
    expect(addressOf('provisioning-pool')).toBe('pool1-prov-192-168-0-10');
    const address = get('ipaddresses.ipam.metal3.io', 'pool1-prov-192-168-0-10');
    expect(address.spec).toMatchObject({ address: '192.168.0.10', prefix: 24, gateway: '192.168.0.1', pool: { name: 'pool1' }, claim: { name: 'provisioning-pool' } });
    expect(address.metadata.finalizers).toEqual(['ipaddress.ipam.metal3.io']);
    expect(get('ipclaims.ipam.metal3.io', 'provisioning-pool').metadata.finalizers).toEqual(['ipclaim.ipam.metal3.io']);
    await waitFor('the pool status', () => get('ippools.ipam.metal3.io', 'pool1')?.status?.indexes?.['provisioning-pool'] === '192.168.0.10', LONG);
    // Metal3's short names work.
    expect(kubectl(['get', 'ipp,ipc,ipa', '-n', NS, '-o', 'name']).stdout).toContain('ipaddress.ipam.metal3.io/pool1-prov-192-168-0-10');
  }, LONG);

  it('refuses a bad address at admission (CEL, as Metal3\'s patterns do)', () => {
    const r = kubectl(['apply', '-n', NS, '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPPool', metadata: { name: 'bad' }, spec: { namePrefix: 'bad', pools: [{ start: '10.0.0.300', subnet: '10.0.0.0/24' }] } }),
      check: false,
    });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('start must be an IPv4 or IPv6 address');
  });

  it('gives 30 claims applied at once 30 distinct addresses', async () => {
    const names = Array.from({ length: 30 }, (_, i) => `burst-${i}`);
    apply(names.map((n) => claimDoc(n, 'pool1')));
    await waitFor('every claim addressed', () => list('ipclaims.ipam.metal3.io').filter((c) => names.includes(c.metadata.name) && c.status?.address).length === names.length, LONG);
    const addresses = list('ipaddresses.ipam.metal3.io').map((a) => a.spec.address as string);
    expect(new Set(addresses).size).toBe(addresses.length);
    expect(addresses.length).toBe(31);
  }, LONG);

  it('reports a full pool on the claim, and gives a released address to it once the holder is deleted', async () => {
    apply([{ apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPPool', metadata: { name: 'small' }, spec: { namePrefix: 'small', pools: [{ start: '10.5.0.1', end: '10.5.0.2' }] } }]);
    apply([claimDoc('s1', 'small'), claimDoc('s2', 'small')]);
    await waitFor('two claims addressed', () => addressOf('s1') !== undefined && addressOf('s2') !== undefined, LONG);
    apply([claimDoc('s3', 'small')]);
    await waitFor('the full pool reported', () => /Exhausted IP Pools: pool .*\/small has 2 address/.test(get('ipclaims.ipam.metal3.io', 's3')?.status?.errorMessage ?? ''), LONG);
    const s1 = addressOf('s1')!;
    const s1Address = get('ipaddresses.ipam.metal3.io', s1).spec.address;
    kubectl(['delete', 'ipclaims.ipam.metal3.io', 's1', '-n', NS, '--wait=false']);
    await waitFor('s3 to get the released address', () => addressOf('s3') !== undefined, LONG);
    expect(get('ipaddresses.ipam.metal3.io', addressOf('s3')!).spec.address).toBe(s1Address);
    expect(get('ipclaims.ipam.metal3.io', 's1')).toBeUndefined();
    expect(get('ipclaims.ipam.metal3.io', 's3').status.errorMessage).toBeUndefined();

    // The pool stays while its claims hold addresses, and goes once they are deleted.
    kubectl(['delete', 'ippools.ipam.metal3.io', 'small', '-n', NS, '--wait=false']);
    await waitFor('the pool deletion to be seen', () => get('ippools.ipam.metal3.io', 'small')?.metadata?.deletionTimestamp !== undefined, LONG);
    expect(get('ippools.ipam.metal3.io', 'small')).toBeDefined();
    kubectl(['delete', 'ipclaims.ipam.metal3.io', 's2', 's3', '-n', NS, '--wait=false']);
    await waitFor('the pool gone', () => get('ippools.ipam.metal3.io', 'small') === undefined, LONG);
    expect(list('ipaddresses.ipam.metal3.io').filter((a) => a.spec.pool.name === 'small')).toEqual([]);
  }, LONG);
});
