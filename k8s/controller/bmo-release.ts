/**
 * What Metal3's operator leaves on a host's companions, released when
 * metalflow deletes a host it took over: BMO puts the finalizer
 * `baremetalhost.metal3.io/secret` on the BMC credentials and
 * preprovisioning network data Secrets and `baremetalhost.metal3.io/hardwareData`
 * on the HardwareData, and removes them itself only while deleting the host.
 * Without this, a taken-over host's Secrets and HardwareData stay
 * Terminating for ever once deleted.
 */
import { isKubeError } from '../../clients/kubernetes/kube-error';
import { PARTIAL_METADATA, type KubeRest } from '../../clients/kubernetes/kube-rest';
import type { HostRef } from '../../model/host';

export const BMO_SECRET_FINALIZER = 'baremetalhost.metal3.io/secret';
export const BMO_HARDWARE_DATA_FINALIZER = 'baremetalhost.metal3.io/hardwareData';
const JSON_PATCH = 'application/json-patch+json';

interface Meta {
  metadata?: { finalizers?: string[] };
}

/**
 * Removes `finalizer` from the object at `path` when present. A JSON patch
 * that first tests the list entry, so a concurrent change to the finalizers is
 * never overwritten (the patch fails and the reconcile is retried). Metadata
 * only, both ways: a Secret's data is never read.
 */
async function dropFinalizer(rest: KubeRest, path: string, finalizer: string): Promise<boolean> {
  let obj: Meta;
  try {
    obj = await rest.call<Meta>('GET', path, { accept: PARTIAL_METADATA });
  } catch (err) {
    if (isKubeError(err, 'not-found')) return false;
    throw err;
  }
  const at = (obj.metadata?.finalizers ?? []).indexOf(finalizer);
  if (at === -1) return false;
  await rest.call('PATCH', path, {
    body: [
      { op: 'test', path: `/metadata/finalizers/${at}`, value: finalizer },
      { op: 'remove', path: `/metadata/finalizers/${at}` },
    ],
    contentType: JSON_PATCH,
    accept: PARTIAL_METADATA,
  });
  return true;
}

/** The Secrets BMO releases when it deletes a host: BMC credentials and preprovisioning network data. */
function heldSecrets(spec: unknown): string[] {
  const s = (spec ?? {}) as { bmc?: { credentialsName?: unknown }; preprovisioningNetworkDataName?: unknown };
  return [s.bmc?.credentialsName, s.preprovisioningNetworkDataName].filter((n): n is string => typeof n === 'string' && n !== '');
}

/**
 * A deleted host's companions, once its workflow has let go: BMO's finalizers
 * on its Secrets and HardwareData released, the HardwareData deleted (owner
 * references alone would need a garbage collector, which not every cluster, or
 * test, runs). Returns what was released, for the log.
 */
export async function releaseCompanions(rest: KubeRest, ref: HostRef, spec: unknown): Promise<string[]> {
  const released: string[] = [];
  for (const name of heldSecrets(spec)) {
    if (await dropFinalizer(rest, `/api/v1/namespaces/${ref.namespace}/secrets/${name}`, BMO_SECRET_FINALIZER)) released.push(`Secret ${name}`);
  }
  const hardwareData = `/apis/metal3.io/v1alpha1/namespaces/${ref.namespace}/hardwaredata/${ref.name}`;
  if (await dropFinalizer(rest, hardwareData, BMO_HARDWARE_DATA_FINALIZER)) released.push(`HardwareData ${ref.name}`);
  await rest.call('DELETE', hardwareData).catch((err: unknown) => {
    if (!isKubeError(err, 'not-found')) throw err;
  });
  return released;
}
