/**
 * The host's DHCP reservation (spec.dhcp): written
 * to its site's dnsmasq before anything else the host does (so the boot MAC
 * has its address when it first PXE-boots), written again when the MAC,
 * address, site, hostname or tags change, and released once the host is
 * deleted (not before: deprovisioning and cleaning still boot it over the
 * network). An address from spec.dhcp.ipPool is claimed from the pool's
 * workflow (the claim named after the host) and given back with the host.
 * While idle, the lease is read back into status.dhcp every
 * `dhcpLeaseCheckSeconds`; the idle loop continues as new as usual, so the
 * checks never grow a run's history without bound.
 */
import { isCancellation, log, proxyActivities } from '@temporalio/workflow';
import type { DhcpActivities } from '../../activities/dhcp/activities';
import type { DhcpReservation } from '../../model/dhcp';
import { DEFAULT_DHCP_SITE, type HostDhcp, type HostDhcpStatus } from '../../model/host-dhcp';
import type { AddressNetworkData } from '../../model/network-data';
import type { DhcpState, HostState } from '../../contracts/host';
import { ACTIVITY_OPTIONS } from '../common/activity-options';
import { failureMessage } from '../common/failure-message';
import { now, type HostContext } from './context';

const dhcp = proxyActivities<DhcpActivities>(ACTIVITY_OPTIONS.dhcp);

export const DEFAULT_LEASE_CHECK_SECONDS = 60;
const FAILED = 'DHCP reservation failed: ';
/** dnsmasq hands out single-label hostnames; a host name with dots gets none unless spec.dhcp.hostname says. */
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

const hostKey = (s: HostState): string => `${s.ref.namespace}/${s.ref.name}`;

/**
 * Whether the host's DHCP state is kept: true once the host has had spec.dhcp.
 * Synchronous: an extra await would reorder commands against update completions.
 */
export function dhcpTracked(s: HostState): boolean {
  if (s.dhcp) return true;
  if (!s.spec?.dhcp) return false;
  s.dhcp = {};
  return true;
}

function reservationOf(s: HostState, d: HostDhcp, address: string | undefined): { site: string; reservation: DhcpReservation } {
  const hostname = d.hostname ?? (LABEL.test(s.ref.name) ? s.ref.name : undefined);
  return {
    site: d.site ?? DEFAULT_DHCP_SITE,
    reservation: {
      host: hostKey(s),
      mac: s.spec?.bootMACAddress ?? '',
      ...(d.ignore ? { ignore: true } : { ...(address ? { ip: address } : {}), ...(hostname ? { hostname } : {}), ...(d.tags?.length ? { tags: d.tags } : {}) }),
    },
  };
}

async function releaseClaim(s: HostState, state: DhcpState): Promise<void> {
  const a = state.allocation;
  if (!a) return;
  await dhcp.releaseHostAddress({ pool: { namespace: s.ref.namespace, name: a.pool }, claim: a.claim });
  delete state.allocation;
}

/**
 * Brings the reservation in line with spec.dhcp. `again` when it failed: the
 * error is recorded on the host (the host does nothing else meanwhile: a host
 * without its reservation must not PXE-boot) and the backoff has passed.
 */
/** Call only when dhcpTracked(s). */
export async function syncDhcp(ctx: HostContext, backoff: () => Promise<void>): Promise<'again' | undefined> {
  const { s } = ctx;
  const state = s.dhcp;
  // On delete the reservation stays until the host is gone (releaseDhcpOnDelete).
  if (!state || s.deleteRequested) return undefined;
  const d = s.spec?.dhcp;
  try {
    let changed = false;
    if (state.allocation && state.allocation.pool !== d?.ipPool?.name) {
      await releaseClaim(s, state);
      changed = true;
    }
    if (d?.ipPool && !state.allocation) {
      const a = await dhcp.claimHostAddress({ pool: { namespace: s.ref.namespace, name: d.ipPool.name }, claim: s.ref.name });
      const { address, prefix, gateway, dnsServers } = a;
      state.allocation = { pool: d.ipPool.name, claim: s.ref.name, address, ...(prefix !== undefined ? { prefix } : {}), ...(gateway ? { gateway } : {}), ...(dnsServers ? { dnsServers } : {}) };
      changed = true;
    }
    const target = d ? reservationOf(s, d, d.address ?? state.allocation?.address) : undefined;
    const fingerprint = target ? JSON.stringify(target) : undefined;
    if (state.written && state.written.site !== target?.site) {
      await dhcp.releaseDhcp({ site: state.written.site, host: hostKey(s) });
      delete state.written;
      delete s.status.dhcp;
      changed = true;
    }
    if (target && fingerprint && state.written?.fingerprint !== fingerprint) {
      await dhcp.reserveDhcp(target);
      state.written = { site: target.site, fingerprint };
      const ip = target.reservation.ip;
      const a = state.allocation;
      s.status.dhcp = { site: target.site, ...(ip ? { reservedAddress: ip } : {}), ...(a ? { ipPool: { name: a.pool, claim: a.claim } } : {}) };
      // The lease is read again soon: the old one may be for another MAC or address.
      delete state.leaseCheckedAt;
      changed = true;
    }
    if (state.failed) {
      delete state.failed;
      if (s.status.errorMessage.startsWith(FAILED)) Object.assign(s.status, { errorType: '', errorMessage: '', errorCount: 0, operationalStatus: 'OK' });
      changed = true;
    }
    if (changed) {
      s.status.lastUpdated = now();
      ctx.publish();
      const what = target ? `${target.reservation.mac} → ${target.reservation.ignore ? 'ignored' : target.reservation.ip} at site ${target.site}` : 'released';
      await ctx.sync({ type: 'Normal', reason: 'DhcpReservation', message: `DHCP reservation ${what}` });
    }
    return undefined;
  } catch (err) {
    if (isCancellation(err)) throw err;
    state.failed = true;
    Object.assign(s.status, { errorType: 'registration error', errorMessage: FAILED + failureMessage(err), operationalStatus: 'error', lastUpdated: now() });
    s.status.errorCount += 1;
    ctx.publish();
    await ctx.sync({ type: 'Warning', reason: 'DhcpReservationFailed', message: s.status.errorMessage });
    await backoff();
    return 'again';
  }
}

/** The deleted host's reservation and pool address go; a failure is logged, never holds the delete. Call only when s.dhcp is set. */
export async function releaseDhcpOnDelete(s: HostState): Promise<void> {
  const state = s.dhcp;
  if (!state || !s.deleteRequested || s.movedTo) return;
  try {
    if (state.written) await dhcp.releaseDhcp({ site: state.written.site, host: hostKey(s) });
    delete state.written;
    await releaseClaim(s, state);
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.warn(`the deleted host's DHCP reservation or pool address was not released: ${failureMessage(err)}`);
  }
}

/** ms until the lease is due to be read; undefined when this host reads none (no reservation, ignored, checks off). */
export function leaseCheckDelayMs(s: HostState): number | undefined {
  const seconds = s.options.dhcpLeaseCheckSeconds ?? DEFAULT_LEASE_CHECK_SECONDS;
  if (!s.dhcp?.written || s.spec?.dhcp?.ignore || !s.spec?.bootMACAddress || seconds <= 0) return undefined;
  const last = s.dhcp.leaseCheckedAt ? Date.parse(s.dhcp.leaseCheckedAt) : 0;
  return Math.max(0, last + seconds * 1000 - Date.now());
}

/** ms between lease reads (counted in the idle wait's fires); undefined when this host reads none. */
export function leasePeriodMs(s: HostState): number | undefined {
  const seconds = s.options.dhcpLeaseCheckSeconds ?? DEFAULT_LEASE_CHECK_SECONDS;
  return leaseCheckDelayMs(s) === undefined ? undefined : seconds * 1000;
}

/** Reads the boot MAC's lease into status.dhcp; published only when it changed. A failed read is logged and tried at the next check. */
export async function readLease(ctx: HostContext): Promise<void> {
  const { s } = ctx;
  const state = s.dhcp;
  const mac = s.spec?.bootMACAddress;
  if (!state?.written || !mac) return;
  state.leaseCheckedAt = now();
  let lease: Awaited<ReturnType<DhcpActivities['readDhcpLease']>>;
  try {
    lease = await dhcp.readDhcpLease({ site: state.written.site, mac });
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.warn(`reading the DHCP lease failed: ${failureMessage(err)}`);
    return;
  }
  const before = s.status.dhcp ?? { site: state.written.site };
  const { address: _a, leaseExpiry: _e, lastSeen: _l, ...kept } = before;
  const after: HostDhcpStatus = { ...kept, ...(lease ?? {}) };
  if (JSON.stringify(after) === JSON.stringify(before)) return;
  s.status.dhcp = after;
  s.status.lastUpdated = now();
  await ctx.sync();
}

/** The config drive's network data comes from the pool address when the spec names none (model/network-data.ts). */
export function networkDataFrom(s: HostState): AddressNetworkData | undefined {
  const a = s.dhcp?.allocation;
  const spec = s.spec;
  if (!a || !spec?.bootMACAddress || spec.networkData || spec.preprovisioningNetworkDataName) return undefined;
  const { pool, address, prefix, gateway, dnsServers } = a;
  return { mac: spec.bootMACAddress, pool, address, ...(prefix !== undefined ? { prefix } : {}), ...(gateway ? { gateway } : {}), ...(dnsServers ? { dnsServers } : {}) };
}
