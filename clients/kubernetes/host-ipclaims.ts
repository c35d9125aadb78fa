/**
 * The IPClaim object of a host's pool claim (spec.dhcp.ipPool) in Kubernetes
 * mode: named after the host, as the pool workflow's claim is, owned by the
 * BareMetalHost, with Metal3's claim finalizer. The IPAM controller treats it
 * as any claim (creates the IPAddress, sets status.address, and on deletion
 * deletes the IPAddress before releasing the address). Pure I/O.
 */
import { IPAM_API_VERSION, IPCLAIM_FINALIZER } from '../../model/ipam';
import { isKubeError } from './kube-error';
import type { KubeRest } from './kube-rest';
import { ipamPath } from './ipam-objects';
import { bmhObjectPath, createObject, getObject, type ObjectMeta } from './metal3-objects';

/** Set on a host's claim so `kubectl get ipclaims -l metalflow.io/host` lists them. */
export const HOST_CLAIM_LABEL = 'metalflow.io/host';

interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}
interface IPClaimObject {
  metadata: ObjectMeta & { ownerReferences?: OwnerReference[] };
  spec?: { pool?: { name?: string; namespace?: string } };
}

export interface HostClaimRef {
  namespace: string;
  /** The host's name, which is the claim's name. */
  name: string;
}

/** Why the host's claim object cannot be written: `foreign` (another object of the name), `terminating` (its previous claim is still being deleted). */
export class HostClaimError extends Error {
  constructor(
    readonly type: 'foreign' | 'terminating',
    message: string,
  ) {
    super(message);
    this.name = 'HostClaimError';
  }
}

const ownedBy = (obj: IPClaimObject, host: string): boolean =>
  (obj.metadata.ownerReferences ?? []).some((o) => o.kind === 'BareMetalHost' && o.apiVersion.startsWith('metal3.io/') && o.name === host);

/**
 * Creates the host's IPClaim for `pool` unless it is there. An IPClaim of the
 * name that the host does not own is refused (a person made it; sharing its
 * address would give one address to two machines); the host's own claim of
 * another pool still terminating is `terminating` (retry).
 */
export async function ensureHostIpClaim(rest: KubeRest, host: HostClaimRef, pool: string): Promise<void> {
  const bmh = await getObject<{ metadata: ObjectMeta }>(rest, bmhObjectPath(host.namespace, host.name));
  const uid = bmh?.metadata.uid;
  const body = {
    apiVersion: IPAM_API_VERSION,
    kind: 'IPClaim',
    metadata: {
      name: host.name,
      namespace: host.namespace,
      finalizers: [IPCLAIM_FINALIZER],
      labels: { [HOST_CLAIM_LABEL]: host.name },
      ...(uid ? { ownerReferences: [{ apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', name: host.name, uid, blockOwnerDeletion: true }] } : {}),
    },
    spec: { pool: { name: pool, namespace: host.namespace } },
  };
  const made = await createObject<IPClaimObject>(rest, ipamPath('ipclaims', host.namespace), body);
  if ('created' in made) return;
  const existing = await getObject<IPClaimObject>(rest, ipamPath('ipclaims', host.namespace, host.name));
  if (!existing) throw new HostClaimError('terminating', `IPClaim ${host.namespace}/${host.name} was deleted while being created; trying again`);
  const where = `IPClaim ${host.namespace}/${host.name}`;
  if (!ownedBy(existing, host.name)) {
    throw new HostClaimError('foreign', `${where} exists and is not this host's (no BareMetalHost owner reference): the host's pool claim uses its name; rename or delete that claim`);
  }
  if (existing.metadata.deletionTimestamp) throw new HostClaimError('terminating', `${where} of the host's previous pool is still being deleted`);
  if (existing.spec?.pool?.name !== pool) throw new HostClaimError('terminating', `${where} is for pool ${existing.spec?.pool?.name ?? '?'}, not ${pool}; it is released first`);
}

/**
 * Deletes the host's own IPClaim (the IPAM controller then deletes its
 * IPAddress and releases the address, in that order). `absent` when there is
 * none, `foreign` when the object of that name is not the host's (left alone).
 */
export async function deleteHostIpClaim(rest: KubeRest, host: HostClaimRef): Promise<'deleted' | 'absent' | 'foreign'> {
  const path = ipamPath('ipclaims', host.namespace, host.name);
  const existing = await getObject<IPClaimObject>(rest, path);
  if (!existing) return 'absent';
  if (!ownedBy(existing, host.name)) return 'foreign';
  if (existing.metadata.deletionTimestamp) return 'deleted';
  try {
    // Preconditioned on the object read: a claim recreated meanwhile is not deleted by mistake.
    await rest.call('DELETE', path, { body: { preconditions: { uid: existing.metadata.uid } } });
  } catch (err) {
    if (!((isKubeError(err, 'not-found') || isKubeError(err, 'conflict')))) throw err;
  }
  return 'deleted';
}
