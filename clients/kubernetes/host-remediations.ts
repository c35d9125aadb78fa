/** HostRemediation objects (metalflow.io): their path and the status write. Pure I/O. */
import { HOST_REMEDIATION, type HostRemediationStatus } from '../../model/host-remediation';
import { isKubeError } from './kube-error';
import type { KubeRest } from './kube-rest';

export const hostRemediationsPath = (namespace?: string): string =>
  `/apis/${HOST_REMEDIATION.group}/${HOST_REMEDIATION.version}${namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ''}/${HOST_REMEDIATION.plural}`;

/** Merge-patches the status; false when the object is gone (deleted: nothing to report to). */
export async function patchHostRemediationStatus(rest: KubeRest, namespace: string, name: string, status: HostRemediationStatus): Promise<boolean> {
  try {
    await rest.call('PATCH', `${hostRemediationsPath(namespace)}/${encodeURIComponent(name)}/status`, {
      body: { status },
      contentType: 'application/merge-patch+json',
    });
    return true;
  } catch (err) {
    if (isKubeError(err, 'not-found')) return false;
    throw err;
  }
}

/** Creates a HostRemediation; false when one of that name exists already (a deterministic name: created once). */
export async function createHostRemediation(rest: KubeRest, namespace: string, object: Record<string, unknown>): Promise<boolean> {
  try {
    await rest.call('POST', hostRemediationsPath(namespace), { body: { apiVersion: `${HOST_REMEDIATION.group}/${HOST_REMEDIATION.version}`, kind: HOST_REMEDIATION.kind, ...object } });
    return true;
  } catch (err) {
    if (isKubeError(err, 'conflict')) return false;
    throw err;
  }
}
