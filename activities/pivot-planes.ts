/**
 * A pivot's two management planes as Kubernetes clients. A plane names where
 * its kubeconfig is (a file the worker can read, or a Secret in the worker's
 * own cluster, as Cluster API keeps `<cluster>-kubeconfig`); the content is
 * read here, in the activity, and never enters workflow history.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { KubeRest } from '../clients/kubernetes/kube-rest';
import { getObject, secretPath, type SecretObject } from '../clients/kubernetes/metal3-objects';
import type { Plane } from '../types/pivot';

export interface PivotPlaneDeps {
  /** The worker's own cluster (METALFLOW_KUBECONFIG or in-cluster): a plane without a kubeconfig. */
  rest?: KubeRest;
}

/** Built once per kubeconfig per worker: each holds a connection pool. */
const clients = new Map<string, Promise<KubeRest>>();

async function fromKubeconfig(key: string, load: (kc: import('@kubernetes/client-node').KubeConfig) => void): Promise<KubeRest> {
  let client = clients.get(key);
  if (!client) {
    client = (async () => {
      const { KubeConfig } = await import('@kubernetes/client-node');
      const { KubeRest } = await import('../clients/kubernetes/kube-rest');
      const kc = new KubeConfig();
      load(kc);
      return KubeRest.create(kc);
    })();
    clients.set(key, client);
    client.catch(() => clients.delete(key));
  }
  return client;
}

const refused = (side: string, message: string): ApplicationFailure =>
  ApplicationFailure.create({ type: 'PivotPlaneUnusable', nonRetryable: true, message: `${side}: ${message}` });

/** The plane's API server client; a plane that cannot be used is a non-retryable failure naming the field. */
export async function planeRest(deps: PivotPlaneDeps, plane: Plane, side: 'source' | 'target'): Promise<KubeRest> {
  if (plane.kubeconfig) {
    const path = plane.kubeconfig;
    try {
      return await fromKubeconfig(`file:${path}`, (kc) => kc.loadFromFile(path));
    } catch (err) {
      throw refused(`${side}.kubeconfig`, `cannot be loaded: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if (plane.kubeconfigSecret) {
    const { namespace, name, key = 'value' } = plane.kubeconfigSecret;
    if (!deps.rest) throw refused(`${side}.kubeconfigSecret`, 'the worker has no Kubernetes API server of its own to read the Secret from');
    const secret = await getObject<SecretObject>(deps.rest, secretPath(namespace, name));
    const data = secret?.data?.[key];
    if (!data) throw refused(`${side}.kubeconfigSecret`, `Secret ${namespace}/${name} has no key "${key}"`);
    const text = Buffer.from(data, 'base64').toString('utf8');
    // Keyed by the Secret's version: a rotated kubeconfig gets a new client.
    return fromKubeconfig(`secret:${namespace}/${name}/${key}@${secret.metadata.resourceVersion ?? ''}`, (kc) => kc.loadFromString(text));
  }
  if (!deps.rest) throw refused(`${side}.kubeconfig`, "is required: the worker running the pivot has no Kubernetes API server of its own");
  return deps.rest;
}
