/**
 * A pivot's two management planes as Kubernetes clients. The pivot names a
 * plane by the id the operator registered (config/pivot-planes.ts); the
 * registered plane says where its kubeconfig is (a file on the worker, or a
 * Secret in the worker's own cluster, as Cluster API keeps
 * `<cluster>-kubeconfig`). The content is read here, in the activity, and
 * never enters workflow history.
 *
 * A kubeconfig is vetted before @kubernetes/client-node sees it: its parser
 * reads `token-file` paths and its `exec` / `auth-provider` users run
 * commands on the worker. Neither is accepted in a plane's kubeconfig; one
 * from a Secret (whose content namespace admins may write) may name no file
 * at all and no proxy. Its API server must be on the registry's allowedUrls.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parse } from 'yaml';
import { ApplicationFailure } from '@temporalio/common';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { getObject, secretPath, type SecretObject } from '../../clients/kubernetes/metal3-objects';
import { EMPTY_PLANE_REGISTRY, originAllowed, urlOrigin, type PivotPlaneRegistry, type RegisteredPlane } from '../../config/pivot-planes';
import type { Plane } from '../../model/pivot';

export interface PivotPlaneDeps {
  /** The worker's own cluster (METALFLOW_KUBECONFIG or in-cluster): a plane without a kubeconfig. */
  rest?: KubeRest;
  /** The planes the operator registered (METALFLOW_PIVOT_PLANES); none when unset. */
  planes?: PivotPlaneRegistry;
}

/** Built once per kubeconfig per worker: each holds a connection pool. */
const clients = new Map<string, Promise<KubeRest>>();

export const refused = (field: string, message: string): ApplicationFailure =>
  ApplicationFailure.create({ type: 'PivotPlaneUnusable', nonRetryable: true, message: `${field}: ${message}` });

const normalizeUrl = (u: string): string => u.replace(/\/+$/, '');
const sameSecret = (a?: { namespace: string; name: string; key?: string }, b?: { namespace: string; name: string; key?: string }): boolean =>
  !!a && !!b && a.namespace === b.namespace && a.name === b.name && (a.key ?? '') === (b.key ?? '');

/**
 * The registered plane a pivot's plane names: by id, or (a run started before ids) the registered plane with
 * the same kubeconfig, Secret or URL. Nothing the input says beyond that is used. `{}` is the worker's own.
 */
export function resolvePlane(deps: PivotPlaneDeps, plane: Plane, side: 'source' | 'target'): RegisteredPlane {
  const registry = deps.planes ?? EMPTY_PLANE_REGISTRY;
  const registered = [...registry.planes.values()];
  const known = registered.length > 0 ? registered.map((p) => p.id).join(', ') : 'none';
  if (plane.plane !== undefined) {
    const found = registry.planes.get(plane.plane);
    if (!found) throw refused(`${side}.plane`, `no plane "${plane.plane}" is registered in ${registry.source} (registered: ${known})`);
    return found;
  }
  const legacy = plane.kubeconfig ?? plane.kubeconfigSecret ?? plane.api;
  if (legacy === undefined) {
    if (plane.taskQueue || plane.temporalNamespace) throw refused(`${side}`, 'a plane with a task queue or Temporal namespace of its own must be registered and named by id');
    return { id: '' };
  }
  const match = registered.find(
    (p) =>
      (plane.kubeconfig !== undefined && p.kubeconfig === plane.kubeconfig) ||
      (plane.kubeconfigSecret !== undefined && sameSecret(p.kubeconfigSecret, plane.kubeconfigSecret)) ||
      (plane.api !== undefined && p.api !== undefined && normalizeUrl(p.api.url) === normalizeUrl(plane.api.url) && (p.api.tokenFile ?? '') === (plane.api.tokenFile ?? '') && sameSecret(p.api.tokenSecret ?? { namespace: '', name: '' }, plane.api.tokenSecret ?? { namespace: '', name: '' })),
  );
  if (!match) throw refused(`${side}`, `names its kubeconfig, Secret or URL itself, which is no longer accepted: register the plane in ${registry.source} (registered: ${known}) and name it by id`);
  return match;
}

interface RawKubeconfig {
  clusters?: Array<{ name?: string; cluster?: Record<string, unknown> }>;
  users?: Array<{ name?: string; user?: Record<string, unknown> }>;
}

/** What in a kubeconfig would make the worker run something or read a file it did not mean to; undefined when it is clean. */
export function kubeconfigProblem(text: string, fromSecret: boolean): string | undefined {
  let doc: RawKubeconfig;
  try {
    doc = parse(text) as RawKubeconfig;
  } catch (err) {
    return `is not YAML: ${(err as Error).message}`;
  }
  if (typeof doc !== 'object' || doc === null) return 'is not a kubeconfig';
  for (const [i, u] of (doc.users ?? []).entries()) {
    const user = u?.user ?? {};
    if ('exec' in user) return `users[${i}].user.exec is not accepted (it would run a command on the worker); use a token or a client certificate`;
    if ('auth-provider' in user) return `users[${i}].user.auth-provider is not accepted (it may run a command or read files on the worker); use a token or a client certificate`;
    if (fromSecret) {
      for (const f of ['token-file', 'client-certificate', 'client-key']) {
        if (f in user) return `users[${i}].user.${f} is not accepted from a Secret (it names a file on the worker); give the ${f === 'token-file' ? 'token' : `${f}-data`} inline`;
      }
    }
  }
  if (fromSecret) {
    for (const [i, c] of (doc.clusters ?? []).entries()) {
      const cluster = c?.cluster ?? {};
      if ('certificate-authority' in cluster) return `clusters[${i}].cluster.certificate-authority is not accepted from a Secret (it names a file on the worker); give certificate-authority-data`;
      if ('proxy-url' in cluster) return `clusters[${i}].cluster.proxy-url is not accepted from a Secret`;
    }
  }
  return undefined;
}

async function clientFor(key: string, text: string, where: string, field: string, registry: PivotPlaneRegistry, fromSecret: boolean, baseDir?: string): Promise<KubeRest> {
  const problem = kubeconfigProblem(text, fromSecret);
  if (problem) throw refused(field, `${where} ${problem}`);
  let client = clients.get(key);
  if (!client) {
    client = (async () => {
      const { KubeConfig } = await import('@kubernetes/client-node');
      const { KubeRest } = await import('../../clients/kubernetes/kube-rest');
      const kc = new KubeConfig();
      kc.loadFromString(text);
      if (baseDir) kc.makePathsAbsolute(baseDir);
      const server = kc.getCurrentCluster()?.server;
      if (!server) throw refused(field, `${where} has no current cluster`);
      // Checked before the first request: the kubeconfig decides where credentials and hosts' Secrets go.
      if (!originAllowed(registry, server)) throw refused(field, `${where} points at ${urlOrigin(server) ?? server}, which is not on allowedUrls in ${registry.source}`);
      return KubeRest.create(kc);
    })();
    clients.set(key, client);
    client.catch(() => clients.delete(key));
  }
  return client;
}

/** The plane's API server client; a plane that cannot be used is a non-retryable failure naming the field. */
export async function planeRest(deps: PivotPlaneDeps, input: Plane, side: 'source' | 'target'): Promise<KubeRest> {
  const registry = deps.planes ?? EMPTY_PLANE_REGISTRY;
  const plane = resolvePlane(deps, input, side);
  const field = plane.id ? `${side}.plane` : side;
  const name = `plane "${plane.id}"`;
  if (plane.api) throw refused(field, `${name} is a metalflow API plane; the other side is a Kubernetes plane (both must be of one kind)`);
  if (plane.kubeconfig) {
    const path = plane.kubeconfig;
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      throw refused(field, `${name}'s kubeconfig ${path} cannot be read: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    return clientFor(`file:${path}@${createHash('sha256').update(text).digest('hex')}`, text, `${name}'s kubeconfig ${path}`, field, registry, false, dirname(path));
  }
  if (plane.kubeconfigSecret) {
    const { namespace, name: secret, key = 'value' } = plane.kubeconfigSecret;
    if (!deps.rest) throw refused(field, `${name}'s kubeconfig is a Secret, and the worker has no Kubernetes API server of its own to read it from`);
    const obj = await getObject<SecretObject>(deps.rest, secretPath(namespace, secret));
    const data = obj?.data?.[key];
    if (!data) throw refused(field, `${name}'s Secret ${namespace}/${secret} has no key "${key}"`);
    const text = Buffer.from(data, 'base64').toString('utf8');
    // Keyed by the Secret's version: a rotated kubeconfig gets a new client.
    return clientFor(`secret:${namespace}/${secret}/${key}@${obj.metadata.resourceVersion ?? ''}`, text, `${name}'s kubeconfig (Secret ${namespace}/${secret})`, field, registry, true);
  }
  if (!deps.rest) throw refused(`${side}.plane`, "is required: the worker running the pivot has no Kubernetes API server of its own");
  return deps.rest;
}
