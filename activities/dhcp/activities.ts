/**
 * DHCP reservations for hosts (clients/dnsmasq/): one file per host in its
 * site's dnsmasq dhcp-hostsdir, and the host's lease read back for
 * `status.dhcp`. Writes are idempotent (the same reservation twice writes
 * nothing) and touch only metalflow's own files, so retries are safe.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { PoolRef } from '../../model/ipam';
import { IpamError, IpPools, type ClaimAllocation } from '../../control/ip-pools';
import type { DhcpReservation, DhcpStatus } from '../../model/dhcp';
import { normalizeMac } from '../../model/mac';
import { FAILURE } from '../../model/failures';
import { DhcpError } from '../../clients/dnsmasq/errors';
import { releaseReservation, writeReservation, type WriteOutcome } from '../../clients/dnsmasq/hostsdir';
import { readLeases } from '../../clients/dnsmasq/leases';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { deleteHostIpClaim, ensureHostIpClaim, HostClaimError } from '../../clients/kubernetes/host-ipclaims';
import type { DhcpSite } from '../../config/dhcp-sites';

export type { DhcpSite };


export interface DhcpActivityDeps {
  /** Site name → its dnsmasq. */
  sites: Record<string, DhcpSite>;
  /** The IP pool workflows' client; the worker's own (Context.current().client) when unset. */
  client?: Client;
  /** Kubernetes mode: a host's pool claim is also an IPClaim object (clients/kubernetes/host-ipclaims.ts). */
  kube?: KubeRest;
}

function siteOf(deps: DhcpActivityDeps, site: string): DhcpSite {
  const s = Object.hasOwn(deps.sites, site) ? deps.sites[site] : undefined;
  if (!s) {
    const known = Object.keys(deps.sites).sort().join(', ') || 'none configured';
    throw ApplicationFailure.nonRetryable(`no dnsmasq for site "${site}" (sites: ${known})`, FAILURE.dhcpUnusable, { type: 'unknown-site' });
  }
  return s;
}

function asFailure(err: unknown): unknown {
  if (!(err instanceof DhcpError)) return err;
  // A missing dir or a full disk may pass (the site's dnsmasq starting); a conflict or a foreign file needs a person.
  if (err.type === 'io') return ApplicationFailure.retryable(err.message, FAILURE.transient);
  return ApplicationFailure.nonRetryable(err.message, FAILURE.dhcpUnusable, { type: err.type });
}

async function mapped<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw asFailure(err);
  }
}

/** A pool that does not exist, is full, or refuses the claim needs a person: not retried. */
async function pooled<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof IpamError) throw ApplicationFailure.nonRetryable(err.message, FAILURE.dhcpUnusable, { type: err.type });
    // A claim of the host's previous pool still being deleted passes; someone else's object of the name needs a person.
    if (err instanceof HostClaimError && err.type === 'terminating') throw ApplicationFailure.retryable(err.message, FAILURE.transient);
    if (err instanceof HostClaimError) throw ApplicationFailure.nonRetryable(err.message, FAILURE.dhcpUnusable, { type: err.type });
    throw err;
  }
}

export function createDhcpActivities(deps: DhcpActivityDeps) {
  // One per worker, so concurrent claims on a pool share an update (clients/temporal/batcher.ts).
  let pools: IpPools | undefined;
  const poolsOf = (): IpPools => (pools ??= new IpPools({ client: deps.client ?? Context.current().client, taskQueue: Context.current().info.taskQueue }));
  const readLease = async ({ site, mac }: { site: string; mac: string }): Promise<DhcpStatus | null> => {
    const s = siteOf(deps, site);
    const m = normalizeMac(mac);
    if (!m.ok) throw ApplicationFailure.nonRetryable(`${mac}: not a MAC address`, FAILURE.dhcpUnusable, { type: 'invalid' });
    const leases = await mapped(() => readLeases(s.leasesFile));
    const now = Date.now();
    const lease = leases.find((l) => l.mac === m.value && (l.expiry === null || l.expiry.getTime() > now));
    if (!lease) return null;
    const seen = lease.expiry && s.leaseTimeSeconds !== undefined ? new Date(lease.expiry.getTime() - s.leaseTimeSeconds * 1000) : null;
    return { address: lease.ip, leaseExpiry: lease.expiry?.toISOString() ?? null, lastSeen: seen?.toISOString() ?? null };
  };
  return {
    /**
     * The host's address from its IPPool (the claim named after the host): the same one each time it is asked.
     * The pool workflow is the one source of truth: in Kubernetes mode the host's IPClaim object is created
     * first, and the IPAM controller asking the pool for that claim gets this same address (idempotent by
     * claim), then makes its IPAddress. A claim that fails takes its object away again (nothing left to
     * be allocated later for a host that no longer asks).
     */
    async claimHostAddress({ pool, claim }: { pool: PoolRef; claim: string }): Promise<ClaimAllocation> {
      const host = { namespace: pool.namespace, name: claim };
      return pooled(async () => {
        if (deps.kube) await ensureHostIpClaim(deps.kube, host, pool.name);
        try {
          return await poolsOf().allocate(pool, { claim });
        } catch (err) {
          if (deps.kube && err instanceof IpamError) await deleteHostIpClaim(deps.kube, host);
          throw err;
        }
      });
    },

    /**
     * Gives the host's pool address back (deleted host, or spec.dhcp.ipPool removed); false when it held none or the pool is gone.
     * In Kubernetes mode with the host's IPClaim object, deleting the object is the release: the IPAM
     * controller deletes the IPAddress before it releases the address, so a reused address never meets
     * its old object (a release here first could). A claim object of the name that is not the host's is left alone.
     */
    async releaseHostAddress({ pool, claim }: { pool: PoolRef; claim: string }): Promise<{ released: boolean }> {
      if (deps.kube) {
        const outcome = await deleteHostIpClaim(deps.kube, { namespace: pool.namespace, name: claim });
        if (outcome !== 'absent') return { released: outcome === 'deleted' };
      }
      try {
        return { released: (await poolsOf().release(pool, claim)) !== null };
      } catch (err) {
        if (err instanceof IpamError && err.type === 'NotFound') return { released: false };
        throw err;
      }
    },

    /** Enroll or address change: the site's dnsmasq gives the MAC this address from now on. */
    async reserveDhcp({ site, reservation }: { site: string; reservation: DhcpReservation }): Promise<{ outcome: WriteOutcome }> {
      const s = siteOf(deps, site);
      return { outcome: await mapped(() => writeReservation(s.hostsDir, reservation)) };
    },

    /** Delete: the host's MAC gets what an unknown MAC gets. 'absent' when it had no reservation. */
    async releaseDhcp({ site, host }: { site: string; host: string }): Promise<{ outcome: WriteOutcome }> {
      const s = siteOf(deps, site);
      return { outcome: await mapped(() => releaseReservation(s.hostsDir, host)) };
    },

    /** The MAC's current lease for `status.dhcp`, or null when it has none (never asked, or expired). */
    readDhcpLease: readLease,

    /**
     * Reads the MAC's lease every `periodSeconds` (at least 1) and returns only when it differs from
     * `known`, so a host waiting for a lease adds nothing to its history. Heartbeats each read (the
     * count as details): a lost worker is noticed and another one carries on; a cancel ends it. A read
     * that fails for a passing reason (the leases file being rewritten) is logged and tried at the next one.
     */
    async watchDhcpLease({ site, mac, known, periodSeconds }: { site: string; mac: string; known: DhcpStatus | null; periodSeconds: number }): Promise<DhcpStatus | null> {
      const ctx = Context.current();
      const period = Math.max(1, periodSeconds) * 1000;
      const was = JSON.stringify(known);
      for (let reads = 1; ; reads++) {
        try {
          const lease = await readLease({ site, mac });
          if (JSON.stringify(lease) !== was) return lease;
        } catch (err) {
          if (err instanceof ApplicationFailure && err.nonRetryable) throw err;
          ctx.log.warn(`reading the DHCP lease of ${mac} at site ${site} failed; trying again in ${period / 1000} s`, { error: (err as Error).message });
        }
        ctx.heartbeat({ reads });
        await ctx.sleep(period);
      }
    },
  };
}

export type DhcpActivities = ReturnType<typeof createDhcpActivities>;
