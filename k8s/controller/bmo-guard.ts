/**
 * Two operators must never drive the same hosts: both would patch the same
 * Ironic nodes and fight over power and provisioning. Before the controller
 * drives a host it looks for signs that Metal3's baremetal-operator (BMO) is
 * still active:
 * - BMO's leader Lease (`baremetal-operator`, in the namespace BMO runs in) is
 *   held and fresh: a holder is named and its renewTime plus
 *   leaseDurationSeconds is still ahead. BMO releases it on a clean stop
 *   (LeaderElectionReleaseOnCancel): the holder is cleared, so a stopped BMO
 *   is not a sign, and a killed one stops counting once its lease expires.
 * - The host itself was written by BMO's field manager (`baremetal-operator`,
 *   in metadata.managedFields) within the last RECENT_SECONDS: a BMO running
 *   without leader election, or one the Lease check cannot see.
 * METALFLOW_BMO_CHECK=off skips both (e.g. BMO runs against another Ironic).
 */
import { isKubeError } from '../../clients/kubernetes/kube-error';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';

export const BMO_LEASE_NAME = 'baremetal-operator';
/** BMO's binary name, which the API server records as the field manager of its writes. */
export const BMO_FIELD_MANAGER = 'baremetal-operator';
/** A host BMO wrote this recently is taken to be BMO's still. */
export const RECENT_SECONDS = 60;
/** A Lease read is reused this long: every host reconciled at start-up shares one read. */
const LEASE_CACHE_MS = 2000;

interface Lease {
  metadata: { name: string; namespace?: string };
  spec?: { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string; acquireTime?: string };
}

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  time?: string;
}

/** Why a fresh Lease says BMO leads, or undefined. */
export function leaseHeld(lease: Lease, now: Date): string | undefined {
  const holder = lease.spec?.holderIdentity;
  const renewed = lease.spec?.renewTime ?? lease.spec?.acquireTime;
  if (!holder || !renewed) return undefined;
  const until = Date.parse(renewed) + (lease.spec?.leaseDurationSeconds ?? 15) * 1000;
  if (!(until > now.getTime())) return undefined;
  return `Metal3's baremetal-operator holds its leader Lease ${lease.metadata.namespace ?? ''}/${lease.metadata.name} (holder ${holder}, renewed ${renewed})`;
}

/** Why the host's own record says BMO is active on it, or undefined. */
export function hostWrittenByBmo(managedFields: readonly ManagedFieldsEntry[] | undefined, now: Date): string | undefined {
  for (const f of managedFields ?? []) {
    if (f.manager !== BMO_FIELD_MANAGER || !f.time) continue;
    const age = (now.getTime() - Date.parse(f.time)) / 1000;
    if (age < RECENT_SECONDS) return `Metal3's baremetal-operator wrote this host ${Math.max(0, Math.round(age))} s ago (metadata.managedFields, manager ${BMO_FIELD_MANAGER})`;
  }
  return undefined;
}

export class BmoGuard {
  private cached?: { at: number; reason: string | undefined };
  private reading?: Promise<string | undefined>;

  constructor(
    private readonly rest: KubeRest,
    private readonly opts: { leaseNamespace?: string; now?: () => Date } = {},
  ) {}

  /** Why the host must not be driven now, or undefined; a Lease that cannot be read is a reason too. */
  async refuse(managedFields: readonly ManagedFieldsEntry[] | undefined): Promise<string | undefined> {
    const now = this.opts.now?.() ?? new Date();
    return (await this.lease(now)) ?? hostWrittenByBmo(managedFields, now);
  }

  private async lease(now: Date): Promise<string | undefined> {
    if (this.cached && now.getTime() - this.cached.at < LEASE_CACHE_MS) return this.cached.reason;
    // Hosts reconciled at once while no read is fresh share the read under way (each made its own before).
    this.reading ??= this.readLease(now).finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private async readLease(now: Date): Promise<string | undefined> {
    let reason: string | undefined;
    try {
      reason = (await this.leases()).map((l) => leaseHeld(l, now)).find((r) => r !== undefined);
    } catch (err) {
      reason = `Metal3's baremetal-operator Lease cannot be read (${err instanceof Error ? err.message : String(err)}); grant the controller get/list on leases, or set METALFLOW_BMO_CHECK=off once BMO is stopped`;
    }
    this.cached = { at: now.getTime(), reason };
    return reason;
  }

  private async leases(): Promise<Lease[]> {
    const ns = this.opts.leaseNamespace;
    if (!ns) {
      const list = await this.rest.call<{ items: Lease[] }>('GET', `/apis/coordination.k8s.io/v1/leases?fieldSelector=${encodeURIComponent(`metadata.name=${BMO_LEASE_NAME}`)}`);
      return list.items;
    }
    try {
      return [await this.rest.call<Lease>('GET', `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${BMO_LEASE_NAME}`)];
    } catch (err) {
      if (isKubeError(err, 'not-found')) return [];
      throw err;
    }
  }
}
