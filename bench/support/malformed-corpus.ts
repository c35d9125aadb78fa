/**
 * The malformed-input corpus (issue 10, chaos suite): bad specs
 * (malformed-specs.ts), bad API requests and bad annotations, each with the
 * field its refusal must name. bench/support/malformed-run.ts sends them.
 */
import { SPEC_CASES, type SpecCase } from './malformed-specs';

export { SPEC_CASES, generatedSpecCases, fullSpec, type SpecCase } from './malformed-specs';

export type HttpMethod = 'GET' | 'PUT' | 'POST' | 'DELETE';

/** A request to the HTTP API that must be refused. */
export interface ApiCase {
  name: string;
  /** `existing`: the corpus host, which must be left exactly as it was; `absent`: a host that must still not exist. */
  target: 'existing' | 'absent';
  method: HttpMethod;
  /** Appended to /v1/namespaces/{ns}/hosts/{name}; absolute when it starts with /v1/hosts. */
  path: string;
  /** JSON body; or `raw` to send bytes as they are. */
  body?: unknown;
  raw?: string;
  /** Content type to send; null sends none. Default application/json when there is a body. */
  contentType?: string | null;
  /** Another host name or namespace (bad names). */
  hostName?: string;
  namespace?: string;
  /** Expected status and the field `fields` must name. */
  status: number;
  field: string;
}

/** Builds the spec a case sends from the corpus host's good spec. */
export type SpecFor = (mutate: SpecCase['mutate']) => Record<string, any>;

const INLINE = { credentials: { username: 'admin', password: 'corpus-pw' }, userData: '#cloud-config\nhostname: corpus\n', networkData: '{"links": []}' };

/** Every spec case as a PUT to the existing host, and the first twelve as a create carrying secrets. */
export function specApiCases(specs: SpecCase[], specFor: SpecFor): ApiCase[] {
  const replace = specs.map<ApiCase>((c) => ({ name: `PUT spec: ${c.name}`, target: 'existing', method: 'PUT', path: '', body: { spec: specFor(c.mutate) }, status: 400, field: c.field }));
  const create = specs.slice(0, 12).map<ApiCase>((c) => ({
    name: `create with secrets, spec: ${c.name}`,
    target: 'absent',
    method: 'PUT',
    path: '',
    body: { spec: specFor(c.mutate), ...INLINE },
    status: 400,
    field: c.field,
  }));
  return [...replace, ...create];
}

const put = (name: string, body: unknown, field: string, target: ApiCase['target'] = 'existing', status = 400): ApiCase => ({ name, target, method: 'PUT', path: '', body, status, field });

/** Requests that are wrong in themselves: bodies, names, query strings, reboot modes, power-off keys, pause reasons. */
export function requestCases(specFor: SpecFor): ApiCase[] {
  const spec = specFor(() => undefined);
  const big = 'x'.repeat(1100 * 1024);
  return [
    put('body not an object', [spec], 'body'),
    put('body without spec', {}, 'spec'),
    put('spec not an object', { spec: 'online' }, 'spec'),
    put('unknown body field', { spec, annotations: {} }, 'annotations'),
    put('credentials without password', { spec, credentials: { username: 'admin' } }, 'credentials.password'),
    put('credentials with an empty password', { spec, credentials: { username: 'admin', password: '' } }, 'credentials.password'),
    put('credentials with an unknown field', { spec, credentials: { username: 'admin', password: 'pw', token: 't' } }, 'credentials.token'),
    put('password past 1024', { spec, credentials: { username: 'admin', password: 'p'.repeat(1025) } }, 'credentials.password'),
    put('username not a string', { spec, credentials: { username: 7, password: 'pw' } }, 'credentials.username'),
    put('credentials for a host without a BMC', { spec: { online: true }, credentials: { username: 'admin', password: 'pw' } }, 'credentials', 'absent'),
    put('userData empty', { spec, userData: '' }, 'userData'),
    put('userData not a string', { spec, userData: { hostname: 'x' } }, 'userData'),
    put('userData past 512 KiB', { spec, userData: `#!/bin/sh\n${'#'.repeat(512 * 1024)}` }, 'userData'),
    put('userData #cloud-config not YAML', { spec, userData: '#cloud-config\nusers: [\n' }, 'userData'),
    put('userData Ignition not JSON', { spec, userData: '{"ignition": {"version": "3.4.0"}' }, 'userData'),
    put('networkData a list', { spec, networkData: '[{"id": "eth0"}]' }, 'networkData'),
    put('networkData not JSON or YAML', { spec, networkData: 'links: [\n  - id: eth0' }, 'networkData'),
    put('networkData duplicate keys', { spec, networkData: '{"links": [], "links": []}' }, 'networkData'),
    put('networkData two YAML documents', { spec, networkData: 'links: []\n---\nlinks: []\n' }, 'networkData'),
    put('metaData a string', { spec, metaData: 'worker-0' }, 'metaData'),
    put('metaData with a !!binary value', { spec, metaData: 'key: !!binary aGVsbG8=' }, 'metaData'),
    put('metaData past 64 KiB', { spec, metaData: `a: "${'m'.repeat(64 * 1024)}"` }, 'metaData'),
    put('new host: networkData a number', { spec, networkData: '42', ...{ credentials: INLINE.credentials } }, 'networkData', 'absent'),
    { name: 'body past 1 MiB', target: 'existing', method: 'PUT', path: '', body: { spec, userData: big }, status: 413, field: 'body' },
    { name: 'body not JSON', target: 'existing', method: 'PUT', path: '', raw: '{"spec": {"online": tru', status: 400, field: 'body' },
    { name: 'empty JSON body', target: 'existing', method: 'PUT', path: '', raw: '', status: 400, field: 'body' },
    { name: 'body setting __proto__', target: 'absent', method: 'PUT', path: '', raw: `{"spec": ${JSON.stringify(spec)}, "__proto__": {"admin": true}}`, status: 400, field: 'body' },
    { name: 'PUT without a JSON content type', target: 'existing', method: 'PUT', path: '', raw: JSON.stringify({ spec }), contentType: 'text/plain', status: 415, field: 'header.content-type' },
    { name: 'POST reboot without a content type', target: 'existing', method: 'POST', path: '/reboot', raw: '', contentType: null, status: 415, field: 'header.content-type' },
    { name: 'host name not a DNS name', target: 'absent', method: 'PUT', path: '', hostName: 'Bad_Name', body: { spec, ...INLINE }, status: 400, field: 'metadata.name' },
    { name: 'namespace not a DNS label', target: 'absent', method: 'PUT', path: '', namespace: 'Bad.NS', body: { spec }, status: 400, field: 'metadata.namespace' },
    { name: 'host name past 253', target: 'absent', method: 'PUT', path: '', hostName: 'h'.repeat(254), body: { spec }, status: 400, field: 'path.name' },
    { name: 'node name namespace~name past 255', target: 'absent', method: 'PUT', path: '', hostName: 'n'.repeat(250), body: { spec, ...INLINE }, status: 400, field: 'metadata.name' },
    { name: 'default Secret name past the store limit', target: 'absent', method: 'PUT', path: '', hostName: 'n'.repeat(240), namespace: 'c', body: { spec, networkData: '{}' }, status: 400, field: 'networkData' },
    { name: 'Secret name past the store limit', target: 'absent', method: 'PUT', path: '', body: { spec: { ...spec, userData: { name: 'u'.repeat(250) } } }, status: 400, field: 'spec.userData.name' },
    { name: 'GET with a bad host name', target: 'absent', method: 'GET', path: '', hostName: 'Bad_Name', status: 400, field: 'metadata.name' },
    { name: 'DELETE with a bad host name', target: 'absent', method: 'DELETE', path: '', hostName: '-bad', status: 400, field: 'metadata.name' },
    { name: 'image without url', target: 'existing', method: 'PUT', path: '/image', body: { checksum: 'a'.repeat(64) }, status: 400, field: 'url' },
    { name: 'image URL port 0', target: 'existing', method: 'PUT', path: '/image', body: { url: 'http://images.example:0/os.qcow2', checksum: 'a'.repeat(64) }, status: 400, field: 'spec.image.url' },
    { name: 'image URL oci without a repository', target: 'existing', method: 'PUT', path: '/image', body: { url: 'oci://quay.example' }, status: 400, field: 'spec.image.url' },
    { name: 'image unknown field', target: 'existing', method: 'PUT', path: '/image', body: { url: 'http://images.example/os.qcow2', size: 1 }, status: 400, field: 'size' },
    { name: 'image checksumType unknown', target: 'existing', method: 'PUT', path: '/image', body: { url: 'http://images.example/os.qcow2', checksum: 'a'.repeat(64), checksumType: 'crc32' }, status: 400, field: 'checksumType' },
    { name: 'image URL past 4096', target: 'existing', method: 'PUT', path: '/image', body: { url: `http://images.example/${'i'.repeat(4100)}`, checksum: 'a'.repeat(64) }, status: 400, field: 'url' },
    { name: 'reboot mode unknown', target: 'existing', method: 'POST', path: '/reboot', body: { mode: 'fast' }, status: 400, field: 'mode' },
    { name: 'reboot mode not a string', target: 'existing', method: 'POST', path: '/reboot', body: { mode: 1 }, status: 400, field: 'mode' },
    { name: 'reboot unknown field', target: 'existing', method: 'POST', path: '/reboot', body: { mode: 'hard', force: true }, status: 400, field: 'force' },
    { name: 'reboot body a list', target: 'existing', method: 'POST', path: '/reboot', body: ['hard'], status: 400, field: 'body' },
    { name: 'power-off key with a space', target: 'existing', method: 'PUT', path: '/power-off-requests/bad%20key', body: {}, status: 400, field: 'path.key' },
    { name: 'power-off key past 63', target: 'existing', method: 'PUT', path: `/power-off-requests/${'k'.repeat(64)}`, body: {}, status: 400, field: 'path.key' },
    { name: 'power-off key starting with -', target: 'existing', method: 'PUT', path: '/power-off-requests/-key', body: {}, status: 400, field: 'path.key' },
    { name: 'power-off mode unknown', target: 'existing', method: 'PUT', path: '/power-off-requests/capm3', body: { mode: 'graceful' }, status: 400, field: 'mode' },
    { name: 'power-off release with a bad key', target: 'existing', method: 'DELETE', path: '/power-off-requests/bad!key', status: 400, field: 'path.key' },
    { name: 'pause reason empty', target: 'existing', method: 'PUT', path: '/paused', body: { reason: '' }, status: 400, field: 'reason' },
    { name: 'pause reason past 256', target: 'existing', method: 'PUT', path: '/paused', body: { reason: 'r'.repeat(257) }, status: 400, field: 'reason' },
    { name: 'pause unknown field', target: 'existing', method: 'PUT', path: '/paused', body: { reason: 'maintenance', until: 'tomorrow' }, status: 400, field: 'until' },
    { name: 'list: unknown state', target: 'existing', method: 'GET', path: '/v1/hosts?state=broken', status: 400, field: 'query.state' },
    { name: 'list: namespace not a label', target: 'existing', method: 'GET', path: '/v1/hosts?namespace=Bad_NS', status: 400, field: 'query.namespace' },
    { name: 'list: namespace past 63', target: 'existing', method: 'GET', path: `/v1/hosts?namespace=${'n'.repeat(64)}`, status: 400, field: 'query.namespace' },
    { name: 'list: unknown parameter', target: 'existing', method: 'GET', path: '/v1/hosts?limit=5', status: 400, field: 'query.limit' },
  ];
}

/** An annotation set the controller must refuse, naming the annotation and saying what it accepts. */
export interface AnnotationCase {
  name: string;
  annotations: Record<string, string>;
  /** Spec fields the annotation is judged with (e.g. disablePowerOff, inspectionMode). */
  spec?: Record<string, unknown>;
  /** The annotation the error must name. */
  annotation: string;
  /** Words of the reason that say what is accepted. */
  accepted: RegExp;
}

const STATUS = 'baremetalhost.metal3.io/status';
const HW = 'inspect.metal3.io/hardwaredetails';
const okStatus = { operationalStatus: 'OK', errorMessage: '', errorCount: 0, poweredOn: false, provisioning: { state: 'provisioned', ID: 'a9b5a4d6-7e3c-4d8a-9a5e-2f1c0b7d6e5f' } };
const status = (over: Record<string, unknown>) => JSON.stringify({ ...okStatus, ...over });
const noInspection = { inspectionMode: 'disabled' };

/**
 * Malformed detached and reboot values are not here: Metal3 reads them as its default (detached
 * with deleteAction "delete", a soft reboot), and so does metalflow, with a Warning Event
 * (test/unit/annotations.test.ts, test/k8s/controller.test.ts); nor is a keyed reboot on a
 * disablePowerOff host, which Metal3 reboots (test/k8s/annotations.test.ts).
 */
export const ANNOTATION_CASES: AnnotationCase[] = [
  { name: 'status: not JSON', annotations: { [STATUS]: '{oops' }, annotation: STATUS, accepted: /BareMetalHost status as JSON/ },
  { name: 'status: a list', annotations: { [STATUS]: '[]' }, annotation: STATUS, accepted: /object/ },
  { name: 'status: unknown provisioning state', annotations: { [STATUS]: status({ provisioning: { state: 'ready-ish', ID: '' } }) }, annotation: STATUS, accepted: /must be one of .*"provisioned"/ },
  { name: 'status: unknown operationalStatus', annotations: { [STATUS]: status({ operationalStatus: 'fine' }) }, annotation: STATUS, accepted: /must be one of "", "OK", .*"servicing"/ },
  { name: 'status: unknown field', annotations: { [STATUS]: status({ verdict: 'ok' }) }, annotation: STATUS, accepted: /unexpected property/i },
  { name: 'status: unknown errorType', annotations: { [STATUS]: status({ errorType: 'bad luck' }) }, annotation: STATUS, accepted: /must be one of .*"provisioning error"/ },
  { name: 'status: errorCount negative', annotations: { [STATUS]: status({ errorCount: -1 }) }, annotation: STATUS, accepted: /greater or equal to 0/ },
  { name: 'status: errorMessage past 32768', annotations: { [STATUS]: status({ errorMessage: 'e'.repeat(40_000) }) }, annotation: STATUS, accepted: /less or equal to 32768/ },
  { name: 'status: provisioning missing', annotations: { [STATUS]: JSON.stringify({ operationalStatus: 'OK' }) }, annotation: STATUS, accepted: /required/ },
  { name: 'inspect: now', annotations: { 'inspect.metal3.io': 'now' }, annotation: 'inspect.metal3.io', accepted: /use "disabled" to skip inspection, or an empty value/ },
  { name: 'inspect: Disabled', annotations: { 'inspect.metal3.io': 'Disabled' }, annotation: 'inspect.metal3.io', accepted: /use "disabled"/ },
  { name: 'inspect: disabled against inspectionMode agent', annotations: { 'inspect.metal3.io': 'disabled' }, spec: { inspectionMode: 'agent' }, annotation: 'inspect.metal3.io', accepted: /contradicts spec.inspectionMode/ },
  { name: 'inspect: requested with inspectionMode disabled', annotations: { 'inspect.metal3.io': '' }, spec: noInspection, annotation: 'inspect.metal3.io', accepted: /spec.inspectionMode is "disabled"/ },
  { name: 'hardwaredetails: not JSON', annotations: { [HW]: '{cpu:' }, spec: noInspection, annotation: HW, accepted: /status.hardware as JSON/ },
  { name: 'hardwaredetails: RAM a string', annotations: { [HW]: '{"ramMebibytes": "lots"}' }, spec: noInspection, annotation: HW, accepted: /integer/ },
  { name: 'hardwaredetails: negative CPU count', annotations: { [HW]: '{"cpu": {"count": -1}}' }, spec: noInspection, annotation: HW, accepted: /greater or equal to 0/ },
  { name: 'hardwaredetails: NIC speed a string', annotations: { [HW]: '{"nics": [{"speedGbps": "fast"}]}' }, spec: noInspection, annotation: HW, accepted: /integer/ },
  { name: 'hardwaredetails: unknown field', annotations: { [HW]: '{"gpu": {"count": 1}}' }, spec: noInspection, annotation: HW, accepted: /unexpected property/i },
  { name: 'hardwaredetails: model past 255', annotations: { [HW]: JSON.stringify({ systemVendor: { productName: 'p'.repeat(300) } }) }, spec: noInspection, annotation: HW, accepted: /less or equal to 255/ },
  { name: 'hardwaredetails with inspection enabled', annotations: { [HW]: '{"ramMebibytes": 4096}' }, annotation: HW, accepted: /only used when inspection is disabled/ },
];
