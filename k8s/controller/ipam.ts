/**
 * Metal3 IPAM objects in Kubernetes mode. An IPPool is handed to its pool
 * workflow (update-with-start) and gets `status.indexes` back; an IPClaim
 * gets its allocation from the pool workflow, an IPAddress object named as
 * Metal3 names it, and `status.address`; a full pool or an unknown one is
 * `status.errorMessage`, retried. Finalizers as Metal3's: a deleted claim
 * keeps its address until the IPAddress is deleted and the address released
 * (in that order, so a reused address never meets its old object); a
 * deleted pool waits until no claim holds an address. Holds no state: the
 * pool workflows do, so a controller killed at any point starts over.
 */
import type { Client } from '@temporalio/client';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { addFinalizer, createIpAddress, deleteIpAddress, ipamPath, patchIpamStatus, removeFinalizer } from '../../clients/kubernetes/ipam-objects';
import { IpamError, IpPools } from '../../control/ip-pools';
import {
  IPADDRESS_FINALIZER,
  IPAM_API_VERSION,
  IPCLAIM_FINALIZER,
  IPPOOL_FINALIZER,
  ipAddressSpec,
  REQUESTED_IP_ANNOTATION,
  type IPClaimSpec,
  type IPClaimStatus,
  type IPPoolSpec,
  type IPPoolStatus,
  type PoolRef,
} from '../../model/ipam';
import { validateClaimSpec, validatePoolSpec } from '../../model/ipam-validate';
import { formatFieldErrors } from '../../model/field-error';
import { Informer, watchPaths, type KubeObject } from './informer';
import { WorkQueue } from './work-queue';

interface Labelled extends KubeObject {
  metadata: KubeObject['metadata'] & { labels?: Record<string, string> };
}
export interface IPPoolObject extends Labelled {
  spec: IPPoolSpec;
  status?: IPPoolStatus;
}
export interface IPClaimObject extends Labelled {
  spec: IPClaimSpec;
  status?: IPClaimStatus;
}

export interface IpamControllerDeps {
  rest: KubeRest;
  client: Client;
  taskQueue: string;
  /** The watched namespaces; every namespace when unset (METALFLOW_WATCH_NAMESPACE). */
  namespaces?: readonly string[];
  log: (message: string) => void;
  /** How long a claim waits before asking a full or missing pool again (15 s). */
  retryMs?: number;
}

const POOL = 'pool|';
const CLAIM = 'claim|';

export class IpamController {
  private readonly queue: WorkQueue;
  private readonly pools: Informer<IPPoolObject>;
  private readonly claims: Informer<IPClaimObject>;
  private readonly ipPools: IpPools;

  constructor(private readonly deps: IpamControllerDeps) {
    this.ipPools = new IpPools({ client: deps.client, taskQueue: deps.taskQueue });
    this.queue = new WorkQueue((key) => (key.startsWith(POOL) ? this.reconcilePool(key.slice(POOL.length)) : this.reconcileClaim(key.slice(CLAIM.length))), {
      maxQueued: 100_000,
      concurrency: 32,
      baseBackoffMs: 500,
      maxBackoffMs: 30_000,
    });
    this.pools = new Informer<IPPoolObject>(deps.rest, watchPaths(deps.namespaces, (ns) => ipamPath('ippools', ns)), (key) => this.queue.add(POOL + key), { log: deps.log });
    this.claims = new Informer<IPClaimObject>(deps.rest, watchPaths(deps.namespaces, (ns) => ipamPath('ipclaims', ns)), (key) => this.queue.add(CLAIM + key), { log: deps.log });
  }

  async start(): Promise<void> {
    await this.pools.start();
    await this.claims.start();
  }

  stop(): void {
    this.pools.stop();
    this.claims.stop();
    this.queue.stop();
  }

  private async reconcilePool(key: string): Promise<void> {
    const obj = this.pools.cache.get(key);
    if (!obj) return;
    const ref: PoolRef = { namespace: obj.metadata.namespace ?? '', name: obj.metadata.name };
    if (obj.metadata.deletionTimestamp) {
      if (!(obj.metadata.finalizers ?? []).includes(IPPOOL_FINALIZER)) return;
      try {
        await this.ipPools.remove(ref);
      } catch (err) {
        if (err instanceof IpamError && err.type === 'Conflict') {
          this.deps.log(`${key}: IPPool being deleted waits: ${err.message}`);
          this.queue.addAfter(POOL + key, this.deps.retryMs ?? 15_000);
          return;
        }
        if (!(err instanceof IpamError && err.type === 'NotFound')) throw err;
      }
      await removeFinalizer(this.deps.rest, 'ippools', obj, IPPOOL_FINALIZER);
      return;
    }
    await addFinalizer(this.deps.rest, 'ippools', obj, IPPOOL_FINALIZER);
    const valid = validatePoolSpec(obj.spec);
    if (!valid.ok) {
      this.deps.log(`${key}: IPPool not applied: ${formatFieldErrors(valid.errors)}`);
      return;
    }
    let view;
    try {
      ({ view } = await this.ipPools.apply(ref, valid.value));
    } catch (err) {
      if (!(err instanceof IpamError && err.type === 'InvalidRequest')) throw err;
      this.deps.log(`${key}: IPPool change refused: ${err.message}`);
      view = await this.ipPools.view(ref);
    }
    const status = { indexes: view.status.indexes, ...(view.status.lastUpdated ? { lastUpdated: view.status.lastUpdated } : {}) };
    if (JSON.stringify(obj.status?.indexes ?? {}) !== JSON.stringify(status.indexes)) {
      // indexes replaced whole: a merge patch of a map would keep released claims.
      await patchIpamStatus(this.deps.rest, 'ippools', ref.namespace, ref.name, { indexes: null });
      await patchIpamStatus(this.deps.rest, 'ippools', ref.namespace, ref.name, status);
    }
    // Claims that waited for this pool (it did not exist, or was full) ask again.
    for (const [claimKey, claim] of this.claims.cache) {
      if (claim.spec.pool?.name === ref.name && claim.metadata.namespace === ref.namespace && !claim.status?.address) this.queue.add(CLAIM + claimKey);
    }
  }

  private async reconcileClaim(key: string): Promise<void> {
    const obj = this.claims.cache.get(key);
    if (!obj) return;
    const namespace = obj.metadata.namespace ?? '';
    const claim = obj.metadata.name;
    const ref: PoolRef = { namespace, name: obj.spec.pool?.name ?? '' };
    const setStatus = async (status: Omit<IPClaimStatus, 'errorMessage'> & { errorMessage?: string | null }): Promise<void> => {
      const same = obj.status?.address?.name === status.address?.name && (obj.status?.errorMessage ?? null) === (status.errorMessage ?? null);
      if (!same) await patchIpamStatus(this.deps.rest, 'ipclaims', namespace, claim, status);
    };

    if (obj.metadata.deletionTimestamp) {
      const finalizers = obj.metadata.finalizers ?? [];
      // As Metal3: another finalizer means the claim is still in use; its address stays.
      if (!finalizers.includes(IPCLAIM_FINALIZER) || finalizers.length > 1) return;
      const held = ref.name ? await this.ipPools.claim(ref, claim).catch(notFound(null)) : null;
      const name = held?.name ?? obj.status?.address?.name;
      if (name) await deleteIpAddress(this.deps.rest, namespace, name, IPADDRESS_FINALIZER);
      if (ref.name) await this.ipPools.release(ref, claim).catch(notFound(null));
      await removeFinalizer(this.deps.rest, 'ipclaims', obj, IPCLAIM_FINALIZER);
      this.deps.log(`${key}: IPClaim deleted; ${held ? `address ${held.address} released` : 'it held no address'}`);
      this.queue.add(`${POOL}${namespace}/${ref.name}`);
      return;
    }
    await addFinalizer(this.deps.rest, 'ipclaims', obj, IPCLAIM_FINALIZER);
    const valid = validateClaimSpec(obj.spec, namespace);
    if (!valid.ok) return setStatus({ errorMessage: formatFieldErrors(valid.errors) });
    const requested = obj.metadata.annotations?.[REQUESTED_IP_ANNOTATION];
    let a;
    try {
      a = await this.ipPools.allocate(ref, { claim, ...(requested ? { requestedAddress: requested } : {}) });
    } catch (err) {
      if (!(err instanceof IpamError)) throw err;
      // A full or missing pool may change: ask again later (a release or the pool's creation also brings it back).
      if (err.type === 'PoolExhausted' || err.type === 'NotFound' || err.type === 'AddressUnavailable') this.queue.addAfter(CLAIM + key, this.deps.retryMs ?? 15_000);
      return setStatus({ errorMessage: err.message });
    }
    const pool = this.pools.cache.get(`${namespace}/${ref.name}`);
    const ownerReferences = [
      ...(pool?.metadata.uid ? [{ apiVersion: IPAM_API_VERSION, kind: 'IPPool', name: ref.name, uid: pool.metadata.uid }] : []),
      ...(obj.metadata.uid ? [{ apiVersion: IPAM_API_VERSION, kind: 'IPClaim', name: claim, uid: obj.metadata.uid }] : []),
    ];
    const created = await createIpAddress(this.deps.rest, {
      metadata: { name: a.name, namespace, finalizers: [IPADDRESS_FINALIZER], ownerReferences, ...(obj.metadata.labels ? { labels: obj.metadata.labels } : {}) },
      spec: ipAddressSpec(ref, claim, a),
    });
    if (created.spec.claim.name !== claim) {
      throw new Error(`IPAddress ${namespace}/${a.name} exists for claim ${created.spec.claim.name ?? '?'}, not ${claim}: left alone`);
    }
    await setStatus({ address: { name: a.name, namespace }, errorMessage: null });
    this.queue.add(`${POOL}${namespace}/${ref.name}`);
  }
}

/** A pool that does not exist (deleted meanwhile) holds nothing to release. */
const notFound =
  <T>(value: T) =>
  (err: unknown): T => {
    if (err instanceof IpamError && err.type === 'NotFound') return value;
    throw err;
  };
