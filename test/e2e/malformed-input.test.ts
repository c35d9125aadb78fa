/**
 * The malformed-input corpus end to end (issue 10, chaos suite): every bad
 * spec, generated spec and bad request sent to the real API on the real
 * Temporal with a worker and Ironic; each refused with a 4xx naming the field,
 * and nothing changed: the corpus host's spec, status, power requests, pause,
 * Secrets and workflow history as before, an absent host still absent with no
 * Secret written. Annotations go through the controller's parser.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { FAST_HOST_OPTIONS, startHarness, uniq, type Harness } from '../support/harness';
import { serveApi, writeTokenFile } from '../support/api-client';
import { historyLengthOf, malformedSummary, runMalformedCorpus, sendCase, setUpCorpusHost, type CorpusTarget } from '../../bench/support/malformed-run';

let h: Harness;
let app: FastifyInstance;
let target: CorpusTarget;

beforeAll(async () => {
  // No periodic power check: the corpus host's history must stay still while it is idle.
  h = await startHarness({ hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 0 } });
  const { file, tokens } = writeTokenFile([['corpus', 'admin:*']]);
  const served = await serveApi(h.hosts, { env: { METALFLOW_API_TOKENS_FILE: file } });
  app = served.app;
  target = {
    base: served.base,
    token: tokens.corpus,
    namespace: uniq('corpus'),
    secrets: h.secrets,
    historyLength: historyLengthOf(h.client),
  };
});

afterAll(async () => {
  await app?.close();
  await h?.close();
});

describe('malformed-input corpus through the API', () => {
  it('refuses every case with a field error and changes nothing', async () => {
    const host = await setUpCorpusHost(target);
    const result = await runMalformedCorpus(target, host, { seed: 10, generated: 40 });
    console.log(malformedSummary(result));
    expect(result.failures).toEqual([]);
    expect(result.sent).toBeGreaterThanOrEqual(100);
    expect(result.rejectedWithFieldError).toBe(result.sent);
    expect(result.changedAnything).toBe(0);
    expect(result.annotations.rejectedNamingTheAnnotation).toBe(result.annotations.checked);

    // The check itself can fail: accepted requests are seen as such, and their changes are found.
    const absent = uniq('corpus-control');
    const pause = await sendCase(target, host, absent, { name: 'control: pause', target: 'existing', method: 'PUT', path: '/paused', body: { reason: 'control' }, status: 400, field: 'reason' });
    expect(pause).toMatchObject({ rejectedWithFieldError: false, changed: true });
    const resume = await sendCase(target, host, absent, { name: 'control: resume', target: 'existing', method: 'DELETE', path: '/paused', status: 400, field: 'x' });
    expect(resume.changed).toBe(true);
    const spec = { online: true };
    const create = await sendCase(target, host, absent, { name: 'control: create', target: 'absent', method: 'PUT', path: '', body: { spec, userData: '#!/bin/sh\n' }, status: 400, field: 'x' });
    expect(create).toMatchObject({ rejectedWithFieldError: false, changed: true });
  }, 600_000);
});
