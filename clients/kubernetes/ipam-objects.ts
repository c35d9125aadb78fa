/**
 * Metal3 IPAM objects on the API server (ipam.metal3.io/v1alpha1): their
 * paths, finalizers added and removed by JSON patch (tested entries, so a
 * concurrent change is a 409 and the reconcile is retried), status merge
 * patches, and IPAddress objects created and deleted. Pure I/O.
 */
import { IPAM, IPAM_API_VERSION, type IPAddressSpec } from '../../model/ipam';
import { isKubeError } from './kube-error';
import type { KubeRest } from './kube-rest';

export type IpamPlural = 'ippools' | 'ipclaims' | 'ipaddresses';

export const ipamPath = (plural: IpamPlural, namespace?: string, name?: string): string =>
  `/apis/${IPAM.group}/${IPAM.version}${namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ''}/${plural}${name ? `/${encodeURIComponent(name)}` : ''}`;

const notFoundIsFine = (err: unknown): void => {
  if (!isKubeError(err, 'not-found')) throw err;
};

interface Meta {
  metadata: { name: string; namespace?: string; finalizers?: string[] };
}

/** Adds `finalizer` unless present. */
export async function addFinalizer(rest: KubeRest, plural: IpamPlural, obj: Meta, finalizer: string): Promise<void> {
  const current = obj.metadata.finalizers ?? [];
  if (current.includes(finalizer)) return;
  const body = current.length === 0 ? [{ op: 'add', path: '/metadata/finalizers', value: [finalizer] }] : [{ op: 'add', path: '/metadata/finalizers/-', value: finalizer }];
  await rest.call('PATCH', ipamPath(plural, obj.metadata.namespace, obj.metadata.name), { body, contentType: 'application/json-patch+json' });
}

/** Removes `finalizer` (the entry tested first); a gone object is fine. */
export async function removeFinalizer(rest: KubeRest, plural: IpamPlural, obj: Meta, finalizer: string): Promise<void> {
  const i = (obj.metadata.finalizers ?? []).indexOf(finalizer);
  if (i < 0) return;
  const path = `/metadata/finalizers/${i}`;
  await rest
    .call('PATCH', ipamPath(plural, obj.metadata.namespace, obj.metadata.name), { body: [{ op: 'test', path, value: finalizer }, { op: 'remove', path }], contentType: 'application/json-patch+json' })
    .catch(notFoundIsFine);
}

export async function patchIpamStatus(rest: KubeRest, plural: 'ippools' | 'ipclaims', namespace: string, name: string, status: Record<string, unknown>): Promise<void> {
  await rest.call('PATCH', `${ipamPath(plural, namespace, name)}/status`, { body: { status }, contentType: 'application/merge-patch+json' }).catch(notFoundIsFine);
}

export interface IPAddressObject {
  metadata: { name: string; namespace: string; finalizers?: string[]; labels?: Record<string, string>; ownerReferences?: Record<string, unknown>[] };
  spec: IPAddressSpec;
}

/** Creates the IPAddress; one of that name already there is returned as it is (the caller checks it is its own). */
export async function createIpAddress(rest: KubeRest, obj: IPAddressObject): Promise<IPAddressObject> {
  try {
    return await rest.call<IPAddressObject>('POST', ipamPath('ipaddresses', obj.metadata.namespace), { body: { apiVersion: IPAM_API_VERSION, kind: 'IPAddress', ...obj } });
  } catch (err) {
    if (!isKubeError(err, 'conflict')) throw err;
    return rest.call<IPAddressObject>('GET', ipamPath('ipaddresses', obj.metadata.namespace, obj.metadata.name));
  }
}

/** Deletes the IPAddress, its finalizer first; a gone one is fine. */
export async function deleteIpAddress(rest: KubeRest, namespace: string, name: string, finalizer: string): Promise<void> {
  try {
    const obj = await rest.call<IPAddressObject>('GET', ipamPath('ipaddresses', namespace, name));
    await removeFinalizer(rest, 'ipaddresses', obj, finalizer);
    await rest.call('DELETE', ipamPath('ipaddresses', namespace, name));
  } catch (err) {
    notFoundIsFine(err);
  }
}
