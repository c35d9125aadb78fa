/**
 * docs/api-reference.md against the OpenAPI document the API serves: the file
 * is what `npm run docs:api` renders now, and every worked example names an
 * operation the server has. Stack-free: the server is built in memory and its
 * Temporal connection is never opened.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import { API_DOC, EXAMPLES, renderApiReference, servedOpenApi, type OpenApiDocument } from '../../scripts/docs/api-reference';

let doc: OpenApiDocument;
beforeAll(async () => {
  doc = await servedOpenApi();
});

describe('HTTP API reference', () => {
  it('docs/api-reference.md is what the served OpenAPI document renders (npm run docs:api)', () => {
    expect(readFileSync(join(REPO_ROOT, API_DOC), 'utf8')).toBe(renderApiReference(doc));
  });

  it('every worked example names an operation the server serves', () => {
    const served = new Set(Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)));
    expect(Object.keys(EXAMPLES).filter((k) => !served.has(k))).toEqual([]);
  });
});
