/**
 * The host's DHCP reservation (spec.dhcp): written
 * to its site's dnsmasq before anything else the host does (so the boot MAC
 * has its address when it first PXE-boots), written again when the MAC,
 * address, site, hostname or tags change, and released once the host is
 * deleted (not before: deprovisioning and cleaning still boot it over the
 * network). An address from spec.dhcp.ipPool is claimed from the pool's
 * workflow (the claim named after the host) and given back with the host.
 * While idle, one activity reads the lease every `dhcpLeaseCheckSeconds` and
 * returns only when it changed (LeaseWatch), so waiting for a lease adds
 * nothing to the host's history.
 */
import { CancellationScope, isCancellation, log, proxyActivities } from '@temporalio/workflow';
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
 * Whether the reservation is brought in line before the next decision: for a host that has
 * (or had) spec.dhcp and is not paused (a paused host touches nothing). Synchronous, as dhcpTracked.
 */
export function dhcpDue(s: HostState): boolean {
  return !s.paused && dhcpTracked(s);
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
      // A new reservation: the lease watch starts again for it (LeaseWatch.ensure).
      changed = true;
    }
    if (state.failed) {
      delete state.failed;
      if (s.status.errorMessage.startsWith(FAILED)) Object.assign(s.status, { errorType: '', errorMessage: '', errorCount: 0, operationalStatus: 'OK' });
      changed = true;
    }
    if (changed) {
      s.status.lastUpdated = now();
      ctx.indexForSearch();
      const what = target ? `${target.reservation.mac} → ${target.reservation.ignore ? 'ignored' : target.reservation.ip} at site ${target.site}` : 'released';
      await ctx.writeStatus({ type: 'Normal', reason: 'DhcpReservation', message: `DHCP reservation ${what}` });
    }
    return undefined;
  } catch (err) {
    if (isCancellation(err)) throw err;
    state.failed = true;
    Object.assign(s.status, { errorType: 'registration error', errorMessage: FAILED + failureMessage(err), operationalStatus: 'error', lastUpdated: now() });
    s.status.errorCount += 1;
    ctx.indexForSearch();
    await ctx.writeStatus({ type: 'Warning', reason: 'DhcpReservationFailed', message: s.status.errorMessage });
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

/** The activity options of one lease watch: it runs while the host is idle, as long as that lasts. */
function leaseWatcher(periodSeconds: number): Pick<DhcpActivities, 'watchDhcpLease'> {
  return proxyActivities<DhcpActivities>(ACTIVITY_OPTIONS.dhcpLeaseWatch(periodSeconds));
}

type Lease = Awaited<ReturnType<DhcpActivities['watchDhcpLease']>>;

/**
 * The boot MAC's lease, read into status.dhcp by one activity that reads at most every
 * `dhcpLeaseCheckSeconds` and returns only when the lease changed: while a host waits for a lease
 * (or keeps one), its history does not grow. Started by the idle wait and stopped when an
 * operation starts (or the run hands over); started again for a new reservation. Kept across the
 * loop's passes, as the idle timer is, so a pass that comes back idle starts nothing new.
 */
export class LeaseWatch {
  private running: { key: string; cancel(): void; result: Lease | undefined; done: boolean } | undefined;
  /** A reservation whose watch failed for good (an unknown site): not watched again until it changes. */
  private failedKey: string | undefined;

  constructor(private readonly ctx: HostContext) {}

  /** The reservation a watch reads now; undefined when none is read (no reservation, ignored, checks off). */
  private key(): { key: string; site: string; mac: string; seconds: number } | undefined {
    const { s } = this.ctx;
    const seconds = s.options.dhcpLeaseCheckSeconds ?? DEFAULT_LEASE_CHECK_SECONDS;
    const written = s.dhcp?.written;
    const mac = s.spec?.bootMACAddress;
    if (!written || s.spec?.dhcp?.ignore || !mac || seconds <= 0) return undefined;
    return { key: `${written.fingerprint}|${seconds}`, site: written.site, mac, seconds };
  }

  /** A changed lease has arrived and waits for apply(). */
  arrived(): boolean {
    return this.running?.done === true && this.running.result !== undefined;
  }

  /** Starts a watch unless one for the current reservation is running; stops one for an old reservation. */
  ensure(): void {
    const want = this.key();
    if (this.running && (this.running.key !== want?.key || this.running.done)) this.stop();
    if (!want || this.running || want.key === this.failedKey) return;
    const { s } = this.ctx;
    const { address, leaseExpiry, lastSeen } = s.status.dhcp ?? {};
    const known: Lease = address ? { address, leaseExpiry: leaseExpiry ?? null, lastSeen: lastSeen ?? null } : null;
    const scope = new CancellationScope();
    const run: NonNullable<LeaseWatch['running']> = { key: want.key, cancel: () => scope.cancel(), result: undefined, done: false };
    this.running = run;
    void scope
      .run(() => leaseWatcher(want.seconds).watchDhcpLease({ site: want.site, mac: want.mac, known, periodSeconds: want.seconds }))
      .then(
        (lease) => {
          run.result = lease;
          run.done = true;
        },
        (err: unknown) => {
          run.done = true;
          if (isCancellation(err)) return;
          // Only a failure no retry mends (an unknown site) ends a watch: it waits for a new reservation.
          this.failedKey = run.key;
          log.warn(`watching the DHCP lease failed: ${failureMessage(err)}`);
        },
      );
  }

  /** An operation starts, or the run hands over: the watch goes (started again when idle). */
  stop(): void {
    if (this.running && !this.running.done) this.running.cancel();
    this.running = undefined;
  }

  /**
   * Puts the changed lease into status.dhcp. `fence` first: an activity's result is applied as the
   * idle timer's fire is (idle-wait.ts), so a stale activation starts nothing a replay would not.
   */
  async apply(fence: () => Promise<void>): Promise<void> {
    const run = this.running;
    if (!run?.done || run.result === undefined) return;
    this.running = undefined;
    await fence();
    const { s } = this.ctx;
    const state = s.dhcp;
    if (!state?.written) return;
    state.leaseCheckedAt = now();
    const before = s.status.dhcp ?? { site: state.written.site };
    const { address: _a, leaseExpiry: _e, lastSeen: _l, ...kept } = before;
    const after: HostDhcpStatus = { ...kept, ...(run.result ?? {}) };
    if (JSON.stringify(after) === JSON.stringify(before)) return;
    s.status.dhcp = after;
    s.status.lastUpdated = now();
    await this.ctx.writeStatus();
  }
}

/** The config drive's network data comes from the pool address when the spec names none (model/network-data.ts). */
export function networkDataFrom(s: HostState): AddressNetworkData | undefined {
  const a = s.dhcp?.allocation;
  const spec = s.spec;
  if (!a || !spec?.bootMACAddress || spec.networkData || spec.preprovisioningNetworkDataName) return undefined;
  const { pool, address, prefix, gateway, dnsServers } = a;
  return { mac: spec.bootMACAddress, pool, address, ...(prefix !== undefined ? { prefix } : {}), ...(gateway ? { gateway } : {}), ...(dnsServers ? { dnsServers } : {}) };
}
