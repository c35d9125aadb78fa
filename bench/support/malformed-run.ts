/**
 * Sends the malformed-input corpus to a running API and checks each refusal:
 * a 4xx naming the case's field in `fields`, and nothing changed (the corpus
 * host's spec, status, power requests, pause and Secrets exactly as before, its
 * workflow history no longer; a host that did not exist still does not, and
 * no Secret appeared). Annotations go through the controller's own parser.
 * The chaos harness calls runMalformedCorpus and prints malformedSummary.
 */
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { request } from 'undici';
import type { HostRef, HostSpec } from '../../model/host';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { defaultSecretNames, hostWorkflowId } from '../../model/host-ref';
import { validateHostSpec } from '../../model/validate';
import type { SecretStore } from '../../clients/secrets/secret-store';
import { annotationConflicts, parseAnnotations } from '../../k8s/controller/annotations';
import { ANNOTATION_CASES, fullSpec, generatedSpecCases, requestCases, SPEC_CASES, specApiCases, type ApiCase, type HttpMethod } from './malformed-corpus';

export interface CorpusTarget {
  /** API base URL, e.g. http://127.0.0.1:8080, and a token with admin on the namespace. */
  base: string;
  token?: string;
  namespace: string;
  /** The secret store the API writes to, to see that no Secret changed or appeared. */
  secrets: Pick<SecretStore, 'read' | 'ownedBy'>;
  /** Events in a host workflow's history (undefined: no workflow); must not move while the host is idle. */
  historyLength?: (ref: HostRef) => Promise<number | undefined>;
}

/** CorpusTarget.historyLength from a Temporal client: events in the host workflow's history, undefined when it has none. */
export function historyLengthOf(client: Client): NonNullable<CorpusTarget['historyLength']> {
  return async (ref) => {
    try {
      return (await client.workflow.getHandle(hostWorkflowId(ref)).fetchHistory()).events?.length;
    } catch (err) {
      // fetchHistory reports an unknown workflow as gRPC NOT_FOUND (5).
      if (err instanceof WorkflowNotFoundError || (err as { code?: number }).code === 5) return undefined;
      throw err;
    }
  };
}

export interface CorpusHost {
  name: string;
  mac: string;
  credentialsName: string;
}

export interface CorpusResult {
  sent: number;
  /** Refused with a 4xx whose `fields` names the case's field. */
  rejectedWithFieldError: number;
  /** Cases after which the host, its Secrets or its history differed, or an absent host existed. */
  changedAnything: number;
  annotations: { checked: number; rejectedNamingTheAnnotation: number };
  failures: { name: string; problem: string }[];
}

async function call(target: CorpusTarget, method: HttpMethod, path: string, body?: { json?: unknown; raw?: string; contentType?: string | null }) {
  const payload = body?.raw ?? (body?.json === undefined ? (method === 'PUT' || method === 'POST' ? '{}' : undefined) : JSON.stringify(body.json));
  const contentType = body?.contentType === undefined ? (payload === undefined ? undefined : 'application/json') : body.contentType;
  const res = await request(`${target.base}${path}`, {
    method,
    headers: { ...(contentType ? { 'content-type': contentType } : {}), ...(target.token ? { authorization: `Bearer ${target.token}` } : {}) },
    body: payload,
  });
  const text = await res.body.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, json: json as { fields?: { field: string }[]; spec?: unknown; status?: unknown; generation?: number; deleteRequested?: boolean; power?: { holds?: unknown; reboot?: unknown }; paused?: unknown } | undefined };
}

const hostPath = (ns: string, name: string) => `/v1/namespaces/${encodeURIComponent(ns)}/hosts/${encodeURIComponent(name)}`;

/** Creates the corpus host (fake BMC, inline credentials, user and network data) and waits until it is available. */
export async function setUpCorpusHost(target: CorpusTarget, opts: { timeoutMs?: number } = {}): Promise<CorpusHost> {
  const name = `corpus-${randomBytes(4).toString('hex')}`;
  const mac = ['52', ...[...randomBytes(5)].map((b) => b.toString(16).padStart(2, '0'))].join(':');
  const host: CorpusHost = { name, mac, credentialsName: `${name}-bmc` };
  const spec = corpusSpec(target, host)(() => undefined);
  const res = await call(target, 'PUT', hostPath(target.namespace, name), {
    json: { spec, credentials: { username: 'admin', password: 'corpus-pw' }, userData: '#cloud-config\nhostname: corpus\n', networkData: 'links: []\n' },
  });
  if (res.status !== 201) throw new Error(`creating the corpus host answered ${res.status}: ${JSON.stringify(res.json)}`);
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  for (;;) {
    const view = await call(target, 'GET', hostPath(target.namespace, name));
    const st = view.json?.status as { provisioning?: { state?: string } } | undefined;
    if (st?.provisioning?.state === 'available' && !(view.json as { currentOperation?: unknown }).currentOperation) return host;
    if (Date.now() > deadline) throw new Error(`the corpus host did not become available: ${JSON.stringify(st)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function corpusSpec(target: CorpusTarget, host: CorpusHost) {
  return (mutate: (s: Record<string, any>) => void) => {
    const spec = fullSpec({ address: `fake://${host.name}`, credentialsName: host.credentialsName, mac: host.mac, namespace: target.namespace });
    mutate(spec);
    return JSON.parse(JSON.stringify(spec)) as Record<string, any>;
  };
}

/** Every API case: the hand-written specs, `generated` mutations from `seed`, and the request cases. */
export function apiCases(target: CorpusTarget, host: CorpusHost, opts: { seed?: number; generated?: number } = {}): ApiCase[] {
  const specFor = corpusSpec(target, host);
  const good = specFor(() => undefined);
  const valid = validateHostSpec({ namespace: target.namespace, name: host.name }, good);
  if (!valid.ok) throw new Error(`the corpus's good spec is not valid: ${JSON.stringify(valid.errors)}`);
  const generated = generatedSpecCases(good, opts.seed ?? 10, opts.generated ?? 40);
  return [...specApiCases([...SPEC_CASES, ...generated], specFor), ...requestCases(specFor)];
}

/** What a case could change: the host as the API shows it, the Secrets at stake, the workflow's history. */
async function snapshot(target: CorpusTarget, ref: HostRef, secretNames: string[]) {
  const view = await call(target, 'GET', hostPath(ref.namespace, ref.name));
  const v = view.json;
  const host = view.status === 200 && v ? { spec: v.spec, status: v.status, generation: v.generation, deleteRequested: v.deleteRequested, holds: v.power?.holds, reboot: v.power?.reboot, paused: v.paused } : { status: view.status };
  const owned = await target.secrets.ownedBy(ref.namespace, `${ref.namespace}/${ref.name}`).catch(() => [] as string[]);
  const secrets: Record<string, unknown> = {};
  for (const name of [...new Set([...secretNames, ...owned])]) secrets[name] = (await target.secrets.read(ref.namespace, name).catch(() => 'unreadable')) ?? null;
  return { host, secrets, history: await target.historyLength?.(ref) };
}

function secretNamesOf(c: ApiCase, ref: HostRef): string[] {
  const spec = (c.body as { spec?: Record<string, any> } | undefined)?.spec;
  const named = [spec?.bmc?.credentialsName, spec?.userData?.name, spec?.networkData?.name, spec?.metaData?.name].filter((n): n is string => typeof n === 'string' && n.length <= 248);
  return ref.name.length > 230 ? named : [...named, ...Object.values(defaultSecretNames(ref))];
}

export interface CaseOutcome {
  /** A 4xx naming the case's field. */
  rejectedWithFieldError: boolean;
  changed: boolean;
  problems: string[];
}

/** Sends one case (to the corpus host, or to `absent`) and compares everything it could change before and after. */
export async function sendCase(target: CorpusTarget, host: CorpusHost, absent: string, c: ApiCase): Promise<CaseOutcome> {
  const ref = { namespace: c.namespace ?? target.namespace, name: c.hostName ?? (c.target === 'existing' ? host.name : absent) };
  const names = secretNamesOf(c, ref);
  const before = await snapshot(target, ref, names);
  const path = c.path.startsWith('/v1/') ? c.path : `${hostPath(ref.namespace, ref.name)}${c.path}`;
  const res = await call(target, c.method, path, { json: c.body, raw: c.raw, contentType: c.contentType });
  const fields = res.json?.fields?.map((f) => f.field) ?? [];
  const problems: string[] = [];
  const rejectedWithFieldError = res.status >= 400 && res.status < 500 && fields.includes(c.field);
  if (!rejectedWithFieldError || res.status !== c.status) problems.push(`answered ${res.status} naming ${JSON.stringify(fields)}; expected ${c.status} naming ${c.field}`);
  const after = await snapshot(target, ref, names);
  const changed = !isDeepStrictEqual(before, after) || (c.target === 'absent' && after.host.status !== 404 && after.host.status !== 400);
  if (changed) problems.push(`changed something: before ${JSON.stringify(before).slice(0, 300)} after ${JSON.stringify(after).slice(0, 300)}`);
  return { rejectedWithFieldError, changed, problems };
}

/** Sends every API case and checks the answer and that nothing changed; then runs the annotation cases. */
export async function runMalformedCorpus(target: CorpusTarget, host: CorpusHost, opts: { seed?: number; generated?: number } = {}): Promise<CorpusResult> {
  const result: CorpusResult = { sent: 0, rejectedWithFieldError: 0, changedAnything: 0, annotations: { checked: 0, rejectedNamingTheAnnotation: 0 }, failures: [] };
  const absent = `corpus-absent-${randomBytes(4).toString('hex')}`;
  for (const c of apiCases(target, host, opts)) {
    const outcome = await sendCase(target, host, absent, c);
    result.sent += 1;
    if (outcome.rejectedWithFieldError) result.rejectedWithFieldError += 1;
    if (outcome.changed) result.changedAnything += 1;
    for (const problem of outcome.problems) result.failures.push({ name: c.name, problem });
  }
  result.annotations = runAnnotationCorpus(result.failures);
  return result;
}

/** Every annotation case through the controller's parser and rules, in the order the reconciler applies them. */
export function runAnnotationCorpus(failures: CorpusResult['failures'] = []): CorpusResult['annotations'] {
  let rejected = 0;
  for (const c of ANNOTATION_CASES) {
    const parsed = parseAnnotations(c.annotations);
    const spec = { online: true, ...c.spec } as HostSpec;
    const errors = parsed.errors.length > 0 ? parsed.errors : annotationConflicts(spec, parsed.value);
    const field = `metadata.annotations["${c.annotation}"]`;
    const named = errors.find((e) => e.field === field || e.field.startsWith(`${field}.`));
    if (named && c.accepted.test(named.reason)) rejected += 1;
    else failures.push({ name: `annotation ${c.name}`, problem: `errors ${JSON.stringify(errors).slice(0, 400)}` });
  }
  return { checked: ANNOTATION_CASES.length, rejectedNamingTheAnnotation: rejected };
}

/** The line the chaos harness prints. */
export function malformedSummary(r: CorpusResult): string {
  const sent = r.sent + r.annotations.checked;
  const rejected = r.rejectedWithFieldError + r.annotations.rejectedNamingTheAnnotation;
  return `malformed inputs: ${sent} sent, ${rejected} rejected with a field error, ${r.changedAnything} changed anything`;
}
