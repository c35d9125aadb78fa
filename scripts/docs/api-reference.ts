/**
 * Renders docs/api-reference.md from the OpenAPI document the API server
 * serves at /openapi.json (api/server.ts), asked of a server built in memory
 * whose Temporal connection is never opened. `npm run docs:api` writes it;
 * test/unit/api-reference.test.ts checks the file holds exactly this.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { buildServer } from '../../api/server';
import { HostService } from '../../api/host-service';
import { loadAuthOptions } from '../../api/auth/options';
import { LocalSecretStore } from '../../clients/secrets/local-store';

export const API_DOC = join('docs', 'api-reference.md');

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  description?: string;
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  pattern?: string;
}
interface Parameter { name: string; in: string; required?: boolean; schema?: Schema; description?: string }
interface Operation {
  summary?: string;
  description?: string;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, { description?: string }>;
}
export interface OpenApiDocument {
  info: { title: string; version: string; description?: string };
  paths: Record<string, Record<string, Operation>>;
}

/** The document as GET /openapi.json answers it. */
export async function servedOpenApi(): Promise<OpenApiDocument> {
  const dir = mkdtempSync(join(tmpdir(), 'metalflow-openapi-'));
  // Lazy: building the routes needs a client, never a connection.
  const client = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
  const hosts = new HostService({ client, secrets: new LocalSecretStore(join(dir, 'secrets'), randomBytes(32)), taskQueue: 'openapi' });
  const app = await buildServer(hosts, { auth: loadAuthOptions({ METALFLOW_API_AUTH: 'none' }, '127.0.0.1', () => {}) });
  try {
    const res = await app.inject({ method: 'GET', url: '/openapi.json', headers: { host: '127.0.0.1' } });
    if (res.statusCode !== 200) throw new Error(`GET /openapi.json answered ${res.statusCode}: ${res.body}`);
    return res.json<OpenApiDocument>();
  } finally {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Worked examples, by operation ("METHOD /path" as in the document); the test checks each names a real one. */
export const EXAMPLES: Record<string, string> = {
  'PUT /v1/namespaces/{namespace}/hosts/{name}': `curl -X PUT localhost:8080/v1/namespaces/lab/hosts/server-1 -H "Authorization: Bearer $TOKEN" \\
  -H 'content-type: application/json' -d '{
  "spec": { "online": true, "bootMACAddress": "52:54:00:12:34:56",
            "bmc": { "address": "redfish://10.0.0.5/redfish/v1/Systems/1", "credentialsName": "server-1-bmc" } },
  "credentials": { "username": "admin", "password": "…" } }'`,
  'GET /v1/namespaces/{namespace}/hosts/{name}': `curl localhost:8080/v1/namespaces/lab/hosts/server-1 -H "Authorization: Bearer $TOKEN"`,
  'GET /v1/hosts': `curl 'localhost:8080/v1/hosts?namespace=lab&state=available' -H "Authorization: Bearer $TOKEN"`,
  'PUT /v1/namespaces/{namespace}/hosts/{name}/image': `curl -X PUT localhost:8080/v1/namespaces/lab/hosts/server-1/image -H "Authorization: Bearer $TOKEN" \\
  -H 'content-type: application/json' \\
  -d '{ "url": "http://images/os.qcow2", "checksum": "http://images/os.qcow2.sha256", "checksumType": "sha256", "format": "qcow2" }'`,
  'POST /v1/namespaces/{namespace}/hosts/{name}/reboot': `curl -X POST localhost:8080/v1/namespaces/lab/hosts/server-1/reboot -H "Authorization: Bearer $TOKEN" \\
  -H 'content-type: application/json' -H 'Idempotency-Key: reboot-ticket-4711' -d '{ "mode": "hard" }'`,
  'DELETE /v1/namespaces/{namespace}/hosts/{name}': `curl -X DELETE localhost:8080/v1/namespaces/lab/hosts/server-1 -H "Authorization: Bearer $TOKEN"`,
  'POST /v1/fleet-operations': `curl -X POST localhost:8080/v1/fleet-operations -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{
  "name": "rack-7-reboot", "operation": { "kind": "reboot" },
  "selector": { "namespace": "lab", "labelSelector": { "matchLabels": { "rack": "7" } } },
  "maxConcurrent": 5, "waves": [{ "size": 1 }, { "size": "10%" }], "pauseAfterWave": true }'`,
};

function typeOf(s: Schema | undefined): string {
  if (!s) return '';
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.enum) return s.enum.map((e) => JSON.stringify(e)).join(' \\| ');
  const alts = s.anyOf ?? s.oneOf;
  if (alts) return alts.map(typeOf).join(' \\| ');
  if (s.type === 'array') return `${typeOf(s.items) || 'value'}[]`;
  if (Array.isArray(s.type)) return s.type.join(' \\| ');
  return s.type ?? 'object';
}

const cell = (s: string | undefined): string => (s ?? '').replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');

export function renderApiReference(doc: OpenApiDocument): string {
  const out: string[] = [
    '# HTTP API reference',
    '',
    '<!-- Generated by `npm run docs:api` from the OpenAPI document the API serves (GET /openapi.json): do not edit by hand. -->',
    '',
    `${doc.info.title} ${doc.info.version}. ${cell(doc.info.description)}`,
    '',
    'The API serves this document itself at `GET /openapi.json`. How to call it, errors, roles and idempotency: [api.md](api.md).',
    '',
  ];
  const ops: [string, string, Operation][] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) ops.push([method.toUpperCase(), path, op]);
  }
  out.push('| method | path | summary |', '|---|---|---|');
  for (const [m, p, op] of ops) out.push(`| ${m} | [\`${p}\`](#${anchor(m, p)}) | ${cell(op.summary)} |`);
  out.push('');
  for (const [m, p, op] of ops) {
    out.push(`## ${m} ${p}`, '');
    if (op.summary) out.push(`${cell(op.summary)}.`.replace(/\.\.$/, '.'), '');
    if (op.description) out.push(cell(op.description), '');
    const params = op.parameters ?? [];
    if (params.length > 0) {
      out.push('| parameter | in | type | required | description |', '|---|---|---|---|---|');
      for (const q of params) out.push(`| \`${q.name}\` | ${q.in} | ${typeOf(q.schema)} | ${q.required ? 'yes' : 'no'} | ${cell(q.description ?? q.schema?.description)} |`);
      out.push('');
    }
    const body = op.requestBody?.content?.['application/json']?.schema;
    if (body?.properties) {
      out.push(`Body (\`application/json\`${op.requestBody?.required ? '' : ', optional'}):`, '', '| field | type | required | description |', '|---|---|---|---|');
      for (const [name, s] of Object.entries(body.properties)) {
        out.push(`| \`${name}\` | ${typeOf(s)} | ${body.required?.includes(name) ? 'yes' : 'no'} | ${cell(s.description)} |`);
      }
      out.push('');
    } else if (body) {
      out.push(`Body (\`application/json\`): ${typeOf(body)}.`, '');
    }
    const responses = Object.entries(op.responses ?? {});
    if (responses.length > 0) out.push(`Responses: ${responses.map(([code, r]) => `${code}${r.description && r.description !== 'Default Response' ? ` (${cell(r.description)})` : ''}`).join(', ')}.`, '');
    const example = EXAMPLES[`${m} ${p}`];
    if (example) out.push('Example:', '', '```sh', example, '```', '');
  }
  return out.join('\n');
}

/** GitHub's heading anchor for "## METHOD /path". */
export function anchor(method: string, path: string): string {
  return `${method} ${path}`.toLowerCase().replace(/[^a-z0-9 _-]/g, '').replace(/ /g, '-');
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const root = join(import.meta.dirname, '..', '..');
  const text = renderApiReference(await servedOpenApi());
  writeFileSync(join(root, API_DOC), text);
  console.log(`wrote ${API_DOC} (${readFileSync(join(root, API_DOC), 'utf8').split('\n').length} lines)`);
}
