/**
 * Reads and writes of Metal3 objects and Secrets on one API server, as a
 * pivot moves them between clusters: typed results, 404 as undefined, 409 on
 * create as "exists" so that callers can compare and stay idempotent.
 */
import { isKubeError } from './kube-error';
import type { KubeRest } from './kube-rest';

export interface ObjectMeta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  resourceVersion?: string;
  deletionTimestamp?: string;
  uid?: string;
}

export interface KubeObject<S = unknown, T = unknown> {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: S;
  status?: T;
}

export interface SecretObject {
  metadata: ObjectMeta;
  type?: string;
  data?: Record<string, string>;
}

const METAL3 = '/apis/metal3.io/v1alpha1';
export const MERGE = 'application/merge-patch+json';

export const bmhObjectPath = (namespace: string, name?: string): string => `${METAL3}/namespaces/${namespace}/baremetalhosts${name ? `/${name}` : ''}`;
export const hardwareDataPath = (namespace: string, name?: string): string => `${METAL3}/namespaces/${namespace}/hardwaredata${name ? `/${name}` : ''}`;
export const secretPath = (namespace: string, name?: string): string => `/api/v1/namespaces/${namespace}/secrets${name ? `/${name}` : ''}`;

/** GET, with a 404 as undefined. */
export async function getObject<T>(rest: KubeRest, path: string): Promise<T | undefined> {
  try {
    return await rest.call<T>('GET', path);
  } catch (err) {
    if (isKubeError(err, 'not-found')) return undefined;
    throw err;
  }
}

/** POST; `exists` when an object of that name is already there (the caller compares). */
export async function createObject<T>(rest: KubeRest, collection: string, body: unknown): Promise<{ created: T } | { exists: true }> {
  try {
    return { created: await rest.call<T>('POST', collection, { body }) };
  } catch (err) {
    if (isKubeError(err, 'conflict')) return { exists: true };
    throw err;
  }
}

/** DELETE, a 404 counted as done. */
export async function deleteObject(rest: KubeRest, path: string): Promise<void> {
  try {
    await rest.call('DELETE', path);
  } catch (err) {
    if (!isKubeError(err, 'not-found')) throw err;
  }
}

/** A merge patch of metadata (a null value removes a key), guarded by resourceVersion when given. */
export async function patchMetadata(rest: KubeRest, path: string, metadata: Record<string, unknown>): Promise<void> {
  await rest.call('PATCH', path, { body: { metadata }, contentType: MERGE });
}

/** The namespace exists (created when missing). */
export async function ensureNamespace(rest: KubeRest, namespace: string): Promise<void> {
  await createObject(rest, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
}

/** Does this API server serve Metal3's BareMetalHost? (its CRD installed and established). */
export async function servesBareMetalHosts(rest: KubeRest): Promise<boolean> {
  const group = await getObject<{ resources?: Array<{ name: string }> }>(rest, METAL3);
  return (group?.resources ?? []).some((r) => r.name === 'baremetalhosts');
}
