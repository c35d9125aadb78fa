/**
 * METALFLOW_PIVOT_PLANES: the management planes a pivot may move hosts to or
 * from, registered by the operator in a file (YAML or JSON) read at start by
 * the worker and the API. A pivot names a plane by its id; where the plane's
 * credentials are (a kubeconfig file, a Secret, a token file) is said here
 * only, so an API caller can make the worker read no file and no Secret of
 * its choosing, and send nothing to an address of its choosing:
 *
 *   allowedUrls: [https://mgmt.example:6443, https://mgmt-api.example:8080]
 *   planes:
 *     mgmt:     { kubeconfig: /etc/metalflow/mgmt.kubeconfig, taskQueue: metalflow-hosts, temporalNamespace: mgmt }
 *     mgmt-sec: { kubeconfigSecret: { namespace: metal3, name: mgmt-kubeconfig }, taskQueue: metalflow-hosts }
 *     lab-api:  { api: { url: https://mgmt-api.example:8080, tokenFile: /etc/metalflow/lab.token }, taskQueue: metalflow-hosts }
 *
 * Every plane's API server (the kubeconfig's current cluster, or `api.url`)
 * must be on `allowedUrls` (scheme, host and port; a path is ignored).
 */
import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { parse } from 'yaml';

export interface SecretKeyRef {
  namespace: string;
  name: string;
  key?: string;
}

/** A plane as the operator registered it. */
export interface RegisteredPlane {
  id: string;
  /** Path of the plane's kubeconfig file on the worker. */
  kubeconfig?: string;
  /** A Secret in the worker's own cluster holding the kubeconfig (key `value` by default, as Cluster API names it). */
  kubeconfigSecret?: SecretKeyRef;
  /** A metalflow HTTP API plane: its URL and where its bearer token is. */
  api?: { url: string; tokenFile?: string; tokenSecret?: SecretKeyRef };
  /** The task queue of the plane's metalflow worker. */
  taskQueue?: string;
  /** The Temporal namespace the plane's host workflows live in (default: the pivot's own). */
  temporalNamespace?: string;
}

export interface PivotPlaneRegistry {
  planes: Map<string, RegisteredPlane>;
  /** Origins (`scheme://host:port`) a plane's API server may have. */
  allowedOrigins: Set<string>;
  /** Where it was read from, for messages. */
  source: string;
}

export const EMPTY_PLANE_REGISTRY: PivotPlaneRegistry = { planes: new Map(), allowedOrigins: new Set(), source: 'METALFLOW_PIVOT_PLANES (unset)' };

const ID = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** `scheme://host:port` of an http(s) URL (default ports made explicit), or undefined when it is not one. */
export function urlOrigin(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return undefined;
  if (u.username || u.password) return undefined;
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  return `${u.protocol}//${u.hostname.toLowerCase()}:${port}`;
}

/** Whether the registry lets a plane's API server be at `url`. */
export function originAllowed(registry: PivotPlaneRegistry, url: string): boolean {
  const origin = urlOrigin(url);
  return origin !== undefined && registry.allowedOrigins.has(origin);
}

function secretRef(v: unknown, at: string): SecretKeyRef {
  const o = v as Record<string, unknown> | null;
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new Error(`${at}: must be { namespace, name, key? }`);
  const { namespace, name, key, ...rest } = o;
  if (Object.keys(rest).length > 0) throw new Error(`${at}: unknown field ${Object.keys(rest)[0]} (accepted: namespace, name, key)`);
  if (typeof namespace !== 'string' || !DNS_LABEL.test(namespace)) throw new Error(`${at}.namespace: must be a namespace name`);
  if (typeof name !== 'string' || name.length === 0 || name.length > 253) throw new Error(`${at}.name: must be a Secret name`);
  if (key !== undefined && (typeof key !== 'string' || key.length === 0)) throw new Error(`${at}.key: must be a non-empty string`);
  return { namespace, name, ...(key !== undefined ? { key } : {}) };
}

const absolutePath = (v: unknown, at: string): string => {
  if (typeof v !== 'string' || !isAbsolute(v)) throw new Error(`${at}: must be an absolute path`);
  return v;
};

function plane(id: string, v: unknown, at: string, allowed: Set<string>): RegisteredPlane {
  if (!ID.test(id)) throw new Error(`${at}: the id must be 1 to 63 of a-z, 0-9 and '-', starting and ending with a letter or digit`);
  const o = v as Record<string, unknown> | null;
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new Error(`${at}: must be an object`);
  const { kubeconfig, kubeconfigSecret, api, taskQueue, temporalNamespace, ...rest } = o;
  if (Object.keys(rest).length > 0) throw new Error(`${at}: unknown field ${Object.keys(rest)[0]} (accepted: kubeconfig, kubeconfigSecret, api, taskQueue, temporalNamespace)`);
  const p: RegisteredPlane = { id };
  if ([kubeconfig, kubeconfigSecret, api].filter((x) => x !== undefined).length > 1) throw new Error(`${at}: give one of kubeconfig, kubeconfigSecret or api`);
  if ([kubeconfig, kubeconfigSecret, api].every((x) => x === undefined)) throw new Error(`${at}: give one of kubeconfig, kubeconfigSecret or api (where the plane's API server and its credentials are)`);
  if (kubeconfig !== undefined) p.kubeconfig = absolutePath(kubeconfig, `${at}.kubeconfig`);
  if (kubeconfigSecret !== undefined) p.kubeconfigSecret = secretRef(kubeconfigSecret, `${at}.kubeconfigSecret`);
  if (api !== undefined) {
    const a = api as Record<string, unknown> | null;
    if (typeof a !== 'object' || a === null || Array.isArray(a)) throw new Error(`${at}.api: must be { url, tokenFile | tokenSecret }`);
    const { url, tokenFile, tokenSecret, ...more } = a;
    if (Object.keys(more).length > 0) throw new Error(`${at}.api: unknown field ${Object.keys(more)[0]} (accepted: url, tokenFile, tokenSecret)`);
    if (typeof url !== 'string' || !urlOrigin(url)) throw new Error(`${at}.api.url: must be an http(s) URL without credentials`);
    if (!allowed.has(urlOrigin(url)!)) throw new Error(`${at}.api.url: ${urlOrigin(url)} is not on allowedUrls`);
    if ((tokenFile === undefined) === (tokenSecret === undefined)) throw new Error(`${at}.api: give exactly one of tokenFile or tokenSecret`);
    p.api = { url, ...(tokenFile !== undefined ? { tokenFile: absolutePath(tokenFile, `${at}.api.tokenFile`) } : {}), ...(tokenSecret !== undefined ? { tokenSecret: secretRef(tokenSecret, `${at}.api.tokenSecret`) } : {}) };
  }
  if (taskQueue !== undefined) {
    if (typeof taskQueue !== 'string' || taskQueue.length === 0 || taskQueue.length > 1000) throw new Error(`${at}.taskQueue: must be a task queue name`);
    p.taskQueue = taskQueue;
  }
  if (temporalNamespace !== undefined) {
    if (typeof temporalNamespace !== 'string' || temporalNamespace.length === 0 || temporalNamespace.length > 255) throw new Error(`${at}.temporalNamespace: must be a Temporal namespace name`);
    p.temporalNamespace = temporalNamespace;
  }
  return p;
}

/** The registry in `text` (YAML or JSON); throws naming the field and what is accepted. */
export function parsePivotPlanes(text: string, source: string): PivotPlaneRegistry {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new Error(`${source}: not YAML or JSON: ${(err as Error).message}`);
  }
  const o = doc as Record<string, unknown> | null;
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new Error(`${source}: must be { allowedUrls: [...], planes: { <id>: {...} } }`);
  const { allowedUrls, planes, ...rest } = o;
  if (Object.keys(rest).length > 0) throw new Error(`${source}: unknown field ${Object.keys(rest)[0]} (accepted: allowedUrls, planes)`);
  const allowed = new Set<string>();
  if (allowedUrls !== undefined) {
    if (!Array.isArray(allowedUrls)) throw new Error(`${source}: allowedUrls must be a list of http(s) URLs`);
    allowedUrls.forEach((u: unknown, i) => {
      const origin = typeof u === 'string' ? urlOrigin(u) : undefined;
      if (!origin) throw new Error(`${source}: allowedUrls[${i}] must be an http(s) URL without credentials, e.g. https://mgmt.example:6443`);
      allowed.add(origin);
    });
  }
  const map = new Map<string, RegisteredPlane>();
  if (planes !== undefined) {
    if (typeof planes !== 'object' || planes === null || Array.isArray(planes)) throw new Error(`${source}: planes must be a map of id to plane`);
    for (const [id, v] of Object.entries(planes)) map.set(id, plane(id, v, `${source}: planes.${id}`, allowed));
  }
  return { planes: map, allowedOrigins: allowed, source };
}

/** The registry named by METALFLOW_PIVOT_PLANES; none registered when unset. */
export function loadPivotPlanes(env: NodeJS.ProcessEnv): PivotPlaneRegistry {
  const file = env.METALFLOW_PIVOT_PLANES?.trim();
  if (!file) return EMPTY_PLANE_REGISTRY;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`METALFLOW_PIVOT_PLANES: ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return parsePivotPlanes(text, `METALFLOW_PIVOT_PLANES (${file})`);
}
