/**
 * Leader election on the real kube-apiserver's Lease: another replica whose
 * clock is behind (its renewTime reads as long past) still holds the lease
 * while it renews it, and loses it once it stops; the holder gives the lease
 * up before it expires for the others when it cannot renew.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { KubeRest } from '../../clients/kubernetes/kube-rest';
import { LeaderElector } from '../../k8s/controller/leader';
import { uniq, waitFor } from '../support/harness';
import { KUBECONFIG, kubectl } from './kube-harness';
import { useKubeRest } from './kube-rest-suite';

const NS = uniq('mf-leader');
const kube = useKubeRest(NS);
afterAll(() => kubectl(['delete', 'namespace', NS, '--wait=false'], { check: false }));

const leases = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`;
interface Lease {
  metadata: { resourceVersion: string };
  spec: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number };
}
const microTime = (ms: number): string => new Date(ms).toISOString().replace('Z', '000Z');

describe('leader election', () => {
  it("keeps off a lease another replica renews with a clock an hour behind, and takes it once the renewals stop", async () => {
    const name = 'skewed';
    const hourAgo = Date.now() - 3_600_000;
    await kube.rest.call('POST', leases, {
      body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name }, spec: { holderIdentity: 'other', leaseDurationSeconds: 2, renewTime: microTime(hourAgo) } },
    });
    // The other replica renews every 300 ms; its renewTime moves, by its own clock, an hour behind ours.
    let renewals = 0;
    let renewing = true;
    const renewer = (async () => {
      while (renewing) {
        const lease = await kube.rest.call<Lease>('GET', `${leases}/${name}`);
        if (lease.spec.holderIdentity !== 'other') return;
        renewals += 1;
        await kube.rest.call('PUT', `${leases}/${name}`, { body: { ...lease, spec: { ...lease.spec, renewTime: microTime(hourAgo + renewals * 300) } } }).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 300));
      }
    })();
    const elector = new LeaderElector(kube.rest, { namespace: NS, name, identity: 'me', leaseSeconds: 2, retryMs: 100 });
    let acquired = false;
    void elector.acquire(() => undefined).then(() => (acquired = true), () => undefined);
    try {
      const tries = () => kube.rest.count(`GET ${leases}/${name}`) - renewals;
      // Well past the lease's 2 s of tries while the other renews: none takes it.
      await waitFor('the candidate to try for longer than the lease', async () => renewals >= 12 && tries() >= 20, { timeoutMs: 60_000 });
      expect(acquired).toBe(false);
      renewing = false;
      await renewer;
      await waitFor('the candidate to take the lease once it is no longer renewed', async () => acquired, { timeoutMs: 30_000 });
      expect((await kube.rest.call<Lease>('GET', `${leases}/${name}`)).spec.holderIdentity).toBe('me');
    } finally {
      renewing = false;
      elector.stop();
    }
  });

  it("keeps renewing while every connection of the controller's own client is busy, where an elector sharing those connections loses the lease", async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(KUBECONFIG);
    // The controller's client.
    const busy = await KubeRest.create(kc, { connections: 2 });
    const timing = { leaseSeconds: 3, renewDeadlineMs: 2000, retryMs: 200 };
    const own = await LeaderElector.connect(kc, { namespace: NS, name: 'own-connections', identity: 'me', ...timing });
    const shared = new LeaderElector(busy, { namespace: NS, name: 'shared-connections', identity: 'me', ...timing });
    const hold = new AbortController();
    let watches: Promise<unknown>[] = [];
    let ownLost = false;
    let sharedLost = false;
    let sharedWhy = '';
    try {
      await own.acquire(() => (ownLost = true));
      await shared.acquire((why) => {
        sharedLost = true;
        sharedWhy = why;
      });
      // Then every connection of the controller's client is held by a request that lasts (a watch, as a busy reconcile round holds them).
      watches = [1, 2].map(() =>
        busy.call('GET', `/api/v1/namespaces/${NS}/configmaps`, { query: { watch: true, timeoutSeconds: 120 }, signal: hold.signal }).catch(() => undefined),
      );
      await waitFor('the shared elector to lose its lease behind the busy connections', async () => sharedLost, { timeoutMs: 60_000 });
      // The log line an operator reads: how long, and that the request (not the event loop) was late.
      expect(sharedWhy).toMatch(/^not renewed for \d+ ms \(renew deadline 2000 ms; last try: renewal past the renew deadline; its timer fired \d+ ms late\)$/);
      // Renewals counted by their renewTime as the API server stores it, across well over the renew deadline.
      const seen = new Set<string>();
      await waitFor('the own-connection elector to renew ten times', async () => {
        const lease = await kube.rest.call<Lease>('GET', `${leases}/own-connections`);
        if (lease.spec.holderIdentity === 'me' && lease.spec.renewTime) seen.add(lease.spec.renewTime);
        return seen.size >= 10 || ownLost;
      }, { timeoutMs: 60_000 });
      expect(ownLost).toBe(false);
    } finally {
      own.stop();
      shared.stop();
      hold.abort();
      await Promise.all(watches);
    }
  });

  it('refuses a renew deadline that is not below the lease', () => {
    expect(() => new LeaderElector(kube.rest, { namespace: NS, name: 'x', identity: 'me', leaseSeconds: 2, renewDeadlineMs: 2000 })).toThrow(/renew deadline \(2000 ms\) must be below the lease \(2000 ms\)/);
  });
});
