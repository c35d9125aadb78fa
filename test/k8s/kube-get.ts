/**
 * `kubectl get … -o json` of one object or of a namespace's objects, answered in this process: the
 * Kubernetes tests poll objects several times a second, and each kubectl start costs some 60 ms of CPU (Go's
 * start, the kubeconfig, the discovery cache, a TLS handshake) plus the API server's side of a new connection.
 * A profile of `k8s/annotations` alone put about a quarter of the file's CPU in such short-lived processes.
 *
 * The request runs on a worker thread that keeps one TLS connection per API server; the caller blocks on it
 * (Atomics.wait), so `kubectl()` keeps its synchronous shape. The answer is what kubectl prints for it:
 * `metadata.managedFields` left out, a list's items with their kind and apiVersion. Anything else (other
 * commands and shapes, an API server that does not answer, an answer other than 200 or 404) is left to kubectl.
 */
import { readFileSync } from 'node:fs';
import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { parse } from 'yaml';

export interface GetResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** The REST path of each resource name the tests `kubectl get` (undefined namespace: cluster-scoped). */
const RESOURCES: Record<string, { path: (ns: string | undefined) => string | undefined; kind: string; apiVersion: string; plural: string }> = {};
function resource(names: string[], group: string | undefined, version: string, plural: string, kind: string, namespaced: boolean): void {
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
  const entry = {
    path: (ns: string | undefined) => (namespaced ? (ns ? `${base}/namespaces/${encodeURIComponent(ns)}/${plural}` : undefined) : `${base}/${plural}`),
    kind,
    apiVersion: group ? `${group}/${version}` : version,
    plural,
  };
  for (const n of names) RESOURCES[n] = entry;
}
resource(['bmh', 'bmhs', 'baremetalhost', 'baremetalhosts'], 'metal3.io', 'v1alpha1', 'baremetalhosts', 'BareMetalHost', true);
resource(['hardwaredata'], 'metal3.io', 'v1alpha1', 'hardwaredata', 'HardwareData', true);
resource(['hostremediation', 'hostremediations'], 'metalflow.io', 'v1alpha1', 'hostremediations', 'HostRemediation', true);
resource(['secret', 'secrets'], undefined, 'v1', 'secrets', 'Secret', true);
resource(['node', 'nodes'], undefined, 'v1', 'nodes', 'Node', false);
resource(['event', 'events'], undefined, 'v1', 'events', 'Event', true);

interface Request {
  resource: string;
  name?: string;
  namespace?: string;
  fieldSelector?: string;
  labelSelector?: string;
}

/** `get RESOURCE [NAME] [-n NS] [--field-selector S] [-l S] -o json`, in any order; anything else: undefined. */
export function parseGet(args: readonly string[]): Request | undefined {
  if (args[0] !== 'get') return undefined;
  const positional: string[] = [];
  let namespace: string | undefined;
  let fieldSelector: string | undefined;
  let labelSelector: string | undefined;
  let json = false;
  for (let i = 1; i < args.length; i++) {
    const a = args[i]!;
    const value = args[i + 1];
    if ((a === '-n' || a === '--namespace') && value !== undefined) {
      namespace = value;
      i++;
    } else if (a === '-o' && value !== undefined) {
      if (value !== 'json') return undefined;
      json = true;
      i++;
    } else if (a === '--field-selector' && value !== undefined) {
      fieldSelector = value;
      i++;
    } else if ((a === '-l' || a === '--selector') && value !== undefined) {
      labelSelector = value;
      i++;
    } else if (a.startsWith('-')) return undefined;
    else positional.push(a);
  }
  const [kind, name, ...more] = positional;
  if (!json || !kind || more.length > 0 || !RESOURCES[kind]) return undefined;
  // A selector picks from a list, not from one object.
  if (name !== undefined && (fieldSelector !== undefined || labelSelector !== undefined)) return undefined;
  return { resource: kind, name, namespace, fieldSelector, labelSelector };
}

interface Credentials {
  server: string;
  ca: string;
  cert: string;
  key: string;
}

const credentials = new Map<string, Credentials | null>();

function credentialsOf(kubeconfig: string): Credentials | undefined {
  if (!credentials.has(kubeconfig)) {
    try {
      const kc = parse(readFileSync(kubeconfig, 'utf8')) as {
        clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
        users: { user: { 'client-certificate-data': string; 'client-key-data': string } }[];
      };
      const b64 = (s: string) => Buffer.from(s, 'base64').toString('utf8');
      const cluster = kc.clusters[0]!.cluster;
      const user = kc.users[0]!.user;
      credentials.set(kubeconfig, { server: cluster.server, ca: b64(cluster['certificate-authority-data']), cert: b64(user['client-certificate-data']), key: b64(user['client-key-data']) });
    } catch {
      credentials.set(kubeconfig, null);
    }
  }
  return credentials.get(kubeconfig) ?? undefined;
}

/** The worker thread: one keep-alive agent per API server and client, a GET per message, the answer posted back. */
const WORKER = `
const { parentPort } = require('node:worker_threads');
const https = require('node:https');
const agents = new Map();
parentPort.on('message', ({ url, creds, port, signal }) => {
  const reply = (m) => { port.postMessage(m); port.close(); Atomics.store(signal, 0, 1); Atomics.notify(signal, 0); };
  const id = creds.server + creds.cert;
  let agent = agents.get(id);
  if (!agent) { agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: creds.ca, cert: creds.cert, key: creds.key }); agents.set(id, agent); }
  const req = https.get(url, { agent, headers: { Accept: 'application/json' }, timeout: 20000 }, (res) => {
    const chunks = [];
    res.on('data', (c) => chunks.push(c));
    res.on('end', () => reply({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
    res.on('error', (e) => reply({ error: String(e) }));
  });
  req.on('timeout', () => req.destroy(new Error('timed out')));
  req.on('error', (e) => { agents.delete(id); agent.destroy(); reply({ error: String(e) }); });
});
`;

let worker: Worker | undefined;
let idle: NodeJS.Timeout | undefined;

function fetchSync(url: string, creds: Credentials): { status: number; body: string } | undefined {
  worker ??= new Worker(WORKER, { eval: true });
  worker.unref();
  // Ended after a few idle seconds, its connections with it: no thread or socket of it outlives the file's tests.
  clearTimeout(idle);
  idle = setTimeout(() => {
    void worker?.terminate();
    worker = undefined;
  }, 5_000).unref();
  const signal = new Int32Array(new SharedArrayBuffer(4));
  const { port1, port2 } = new MessageChannel();
  worker.postMessage({ url, creds, port: port2, signal }, [port2]);
  Atomics.wait(signal, 0, 0, 30_000);
  const answer = receiveMessageOnPort(port1)?.message as { status?: number; body?: string; error?: string } | undefined;
  port1.close();
  return answer && answer.status !== undefined ? { status: answer.status, body: answer.body ?? '' } : undefined;
}

/** What kubectl prints for the object: its managedFields left out (kubectl's default). */
function asKubectl(obj: Record<string, unknown>): Record<string, unknown> {
  const metadata = obj.metadata as Record<string, unknown> | undefined;
  if (metadata && 'managedFields' in metadata) {
    const { managedFields: _m, ...rest } = metadata;
    return { ...obj, metadata: rest };
  }
  return obj;
}

/** The answer kubectl would give to `args`, or undefined when kubectl has to give it. */
export function getInProcess(args: readonly string[], kubeconfig: string): GetResult | undefined {
  const request = parseGet(args);
  if (!request) return undefined;
  const res = RESOURCES[request.resource]!;
  const collection = res.path(request.namespace ?? (res.path(undefined) === undefined ? 'default' : undefined));
  const creds = credentialsOf(kubeconfig);
  if (!collection || !creds) return undefined;
  const params = new URLSearchParams();
  if (request.fieldSelector) params.set('fieldSelector', request.fieldSelector);
  if (request.labelSelector) params.set('labelSelector', request.labelSelector);
  const query = params.size > 0 ? `?${params.toString()}` : '';
  const url = `${creds.server}${collection}${request.name !== undefined ? `/${encodeURIComponent(request.name)}` : ''}${query}`;
  const answer = fetchSync(url, creds);
  if (!answer) return undefined;
  if (answer.status === 404 && request.name !== undefined) {
    return { status: 1, stdout: '', stderr: `Error from server (NotFound): ${res.plural} "${request.name}" not found\n` };
  }
  if (answer.status !== 200) return undefined;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(answer.body) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const out =
    request.name !== undefined
      ? asKubectl(body)
      : {
          apiVersion: 'v1',
          items: ((body.items as Record<string, unknown>[] | null) ?? []).map((i) => asKubectl({ apiVersion: res.apiVersion, kind: res.kind, ...i })),
          kind: 'List',
          metadata: { resourceVersion: '' },
        };
  return { status: 0, stdout: `${JSON.stringify(out, null, 4)}\n`, stderr: '' };
}
