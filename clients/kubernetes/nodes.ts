/**
 * The Node and BareMetalHost calls a remediation makes: read, list, patch
 * and delete Nodes, and merge annotations into a BareMetalHost. Pure I/O;
 * what to do with them is the remediation workflow's.
 */
import type { HostRef } from '../../model/host';
import { isKubeError } from './kube-error';
import type { KubeRest } from './kube-rest';

export interface NodeCondition {
  type: string;
  status: string;
  lastHeartbeatTime?: string;
  lastTransitionTime?: string;
}

export interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}

export interface KubeNode {
  metadata: {
    name: string;
    uid: string;
    resourceVersion: string;
    creationTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: { providerID?: string; taints?: Taint[] };
  status?: { conditions?: NodeCondition[]; nodeInfo?: { systemUUID?: string } };
}

const MERGE = 'application/merge-patch+json';
const nodePath = (name: string): string => `/api/v1/nodes/${encodeURIComponent(name)}`;

/** The Node, or undefined when there is none of that name. */
export async function getNode(rest: KubeRest, name: string): Promise<KubeNode | undefined> {
  try {
    return await rest.call<KubeNode>('GET', nodePath(name));
  } catch (err) {
    if (isKubeError(err, 'not-found')) return undefined;
    throw err;
  }
}

export async function listNodes(rest: KubeRest, labelSelector?: string): Promise<KubeNode[]> {
  const list = await rest.call<{ items: KubeNode[] }>('GET', '/api/v1/nodes', { query: { labelSelector } });
  return list.items;
}

/**
 * A merge patch of the Node. With `resourceVersion` the API server refuses it
 * (409) when the Node changed since it was read: used where the patch replaces
 * a list (taints), so a concurrent change is never overwritten.
 */
export async function patchNode(rest: KubeRest, name: string, patch: Record<string, unknown>): Promise<KubeNode> {
  return rest.call<KubeNode>('PATCH', nodePath(name), { body: patch, contentType: MERGE });
}

/**
 * Deletes the Node only if it is still the object `uid` names (a Node created
 * again meanwhile under the same name is left alone). True when it is gone.
 */
export async function deleteNode(rest: KubeRest, name: string, uid: string): Promise<'deleted' | 'absent' | 'replaced'> {
  try {
    await rest.call('DELETE', nodePath(name), { body: { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid } } });
    return 'deleted';
  } catch (err) {
    if (isKubeError(err, 'not-found')) return 'absent';
    if (isKubeError(err, 'conflict')) return 'replaced';
    throw err;
  }
}

const hostPath = (ref: HostRef): string =>
  `/apis/metal3.io/v1alpha1/namespaces/${encodeURIComponent(ref.namespace)}/baremetalhosts/${encodeURIComponent(ref.name)}`;

/** Sets (a string) or removes (null) annotations of a BareMetalHost; false when the host is gone. */
export async function annotateHost(rest: KubeRest, ref: HostRef, annotations: Record<string, string | null>): Promise<boolean> {
  try {
    await rest.call('PATCH', hostPath(ref), { body: { metadata: { annotations } }, contentType: MERGE });
    return true;
  } catch (err) {
    if (isKubeError(err, 'not-found')) return false;
    throw err;
  }
}
