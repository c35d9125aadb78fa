/**
 * A pivot between two API-mode planes on loopback: plane A is the test
 * stack's Ironic, a worker and its HTTP API in Temporal's default namespace;
 * plane B a second Ironic (scripts/stack.sh on its own state dir and port),
 * its own worker, task queue, secret store and HTTP API in a Temporal
 * namespace of its own. Each Ironic behind a recording proxy. The pivot runs
 * on A's worker and reaches both planes only through their APIs, registered
 * as planes by id (tokens in files); the hosts' Secrets go from A's store to B's inside the hand-over
 * activity, never through the pivot's history.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { REPO_ROOT } from '../../config/env';
import { callApi, serveApi, writeTokenFile } from '../support/api-client';
import { IRONIC_URL, TEST_ENV, TEST_STATE_DIR } from '../support/env';
import { randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { secretsInHistories } from '../../bench/support/history-secrets';
import { IronicProxy, isDeploy, isPowerChange } from '../../bench/support/ironic-proxy';
import { createTemporalNamespace } from '../support/temporal-namespace';
import { provisionVerb } from '../k8s/pivot-figures';
import { pivotWorkflowId, type PivotProgress } from '../../contracts/pivot';
import type { HostView } from '../../contracts/host';
import { parsePivotPlanes, type PivotPlaneRegistry } from '../../config/pivot-planes';

const IMAGE = { url: 'http://127.0.0.1/images/pivot-api.qcow2', checksum: 'c'.repeat(64), checksumType: 'sha256', format: 'qcow2' };
const B_STATE = join(TEST_STATE_DIR, '..', 'test-pivot-api-b');
const B_IRONIC_PORT = Number(process.env.TEST_IRONIC_PORT ?? 16385) + 4;
const B_IRONIC_ENV = { ...TEST_ENV, METALFLOW_STATE_DIR: join(B_STATE, 'stack'), IRONIC_PORT: String(B_IRONIC_PORT) };
const stackB = (cmd: string) => execFileSync('bash', [join(REPO_ROOT, 'scripts', 'stack.sh'), cmd, 'ironic'], { env: { ...process.env, ...B_IRONIC_ENV }, stdio: 'inherit' });

interface ApiPlaneUnderTest {
  h: Harness;
  app: FastifyInstance;
  base: string;
  token: string;
  /** The token alone in a file, as the plane's registration names it. */
  tokenFile: string;
  proxy: IronicProxy;
}

/** Both planes, as the operator registers them on both workers and APIs: filled once both APIs listen. */
const planes: PivotPlaneRegistry = { planes: new Map(), allowedOrigins: new Set(), source: 'the test registry' };

async function startPlane(ironicUrl: string, namespace?: string): Promise<ApiPlaneUnderTest> {
  const proxy = new IronicProxy(ironicUrl);
  await proxy.start();
  const h = await startHarness({ ironicUrl: proxy.url, pivotPlanes: planes, ...(namespace ? { namespace } : {}) });
  const { file, tokens } = writeTokenFile([['pivot-admin', 'admin:*']]);
  const { app, base } = await serveApi(h.hosts, { env: { METALFLOW_API_TOKENS_FILE: file }, pivotPlanes: planes });
  const token = tokens['pivot-admin']!;
  const tokenFile = join(mkdtempSync(join(tmpdir(), 'metalflow-pivot-token-')), 'token');
  writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  return { h, app, base, token, tokenFile, proxy };
}

describe('a pivot between two API planes', { timeout: 900_000 }, () => {
  const NS_B = uniq('metalflow-api-plane-b');
  let a: ApiPlaneUnderTest | undefined;
  let b: ApiPlaneUnderTest | undefined;

  beforeAll(async () => {
    rmSync(B_STATE, { recursive: true, force: true });
    mkdirSync(B_STATE, { recursive: true });
    stackB('start');
    createTemporalNamespace(NS_B);
    a = await startPlane(IRONIC_URL);
    b = await startPlane(`http://127.0.0.1:${B_IRONIC_PORT}`, NS_B);
    const registered = parsePivotPlanes(
      JSON.stringify({
        allowedUrls: [a.base, b.base],
        planes: {
          'plane-a': { api: { url: a.base, tokenFile: a.tokenFile }, taskQueue: a.h.taskQueue, temporalNamespace: 'default' },
          'plane-b': { api: { url: b.base, tokenFile: b.tokenFile }, taskQueue: b.h.taskQueue, temporalNamespace: NS_B },
        },
      }),
      'the test registry',
    );
    registered.planes.forEach((p, id) => planes.planes.set(id, p));
    registered.allowedOrigins.forEach((o) => planes.allowedOrigins.add(o));
  }, 300_000);

  afterAll(async () => {
    for (const p of [a, b]) {
      await p?.app.close();
      await p?.h.close();
      await p?.proxy.stop();
    }
    stackB('stop');
  });

  it('moves a provisioned and an available host A → B: adopted as they were, no deploy, clean or power off, gone from A, no Secret in history; one B refuses goes back to A; then one back B → A', async () => {
    const A = a!;
    const B = b!;
    const call = (p: ApiPlaneUnderTest, method: 'GET' | 'PUT' | 'DELETE' | 'POST', path: string, body?: unknown) => callApi(p.base, method, path, body, { token: p.token });
    const ns = uniq('pv-api');
    const PIVOT = uniq('api-move');
    const PASSWORD = `pw-${uniq('planted')}`;
    const USER_DATA = `#cloud-config\n# ${uniq('planted-user-data')}\n`;
    const hosts = { provisioned: 'pa-1', available: 'pa-2' };
    // B refuses this one's create (its credentials Secret there belongs to another host): attached again in A.
    const REFUSED = 'pa-3';
    await B.h.secrets.write(ns, `${REFUSED}-bmc`, { username: 'other', password: 'other' }, `${ns}/someone-else`);
    const path = (name: string) => `/v1/namespaces/${ns}/hosts/${name}`;
    for (const [kind, name] of [...Object.entries(hosts), ['provisioned', REFUSED] as const]) {
      const spec = { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` }, bootMACAddress: randomMac(), online: true, ...(kind === 'provisioned' ? { image: IMAGE } : {}) };
      const res = await call(A, 'PUT', path(name), { metadata: { labels: { move: PIVOT } }, spec, credentials: { username: 'admin', password: PASSWORD }, ...(kind === 'provisioned' ? { userData: USER_DATA } : {}) });
      expect(res.status, res.text).toBe(201);
    }
    const view = async (p: ApiPlaneUnderTest, name: string): Promise<HostView | undefined> => {
      const res = await call(p, 'GET', path(name));
      return res.status === 200 ? (JSON.parse(res.text) as HostView) : undefined;
    };
    const atRest = (v: HostView | undefined, state: string) => v?.status.provisioning.state === state && v.status.poweredOn && !v.currentOperation && v.status.operationalStatus === 'OK';
    const before: Record<string, HostView> = {};
    for (const [state, name] of [...Object.entries(hosts), ['provisioned', REFUSED] as const]) {
      before[name] = await waitFor(`${name} ${state} in A`, async () => {
        const v = await view(A, name);
        return atRest(v, state) ? v : undefined;
      }, { timeoutMs: 300_000, intervalMs: 500 });
    }
    const sentA = A.proxy.requests.length;
    const sentB = B.proxy.requests.length;

    const input = {
      name: PIVOT,
      source: { plane: 'plane-a' },
      target: { plane: 'plane-b' },
      selector: { namespace: ns, labelSelector: { matchLabels: { move: PIVOT } } },
      maxConcurrent: 3,
      maxFailures: 1,
      hostTimeoutSeconds: 600,
    };
    const started = await call(A, 'POST', '/v1/pivots', input);
    expect(started.status, started.text).toBe(201);
    const result = await waitFor('the pivot ends', async () => {
      const p = JSON.parse((await call(A, 'GET', `/v1/pivots/${PIVOT}`)).text) as PivotProgress;
      return ['completed', 'halted', 'cancelled'].includes(p.phase) ? p : undefined;
    }, { timeoutMs: 600_000, intervalMs: 1000 });
    expect(result.phase).toBe('completed');
    expect(result.counts, JSON.stringify(result.hosts)).toMatchObject({ succeeded: 2, failed: 1 });
    const refused = result.hosts.find((h) => h.ref.name === REFUSED)!;
    expect(refused.rolledBack).toBe(true);
    expect(refused.error).toContain(`Secret ${ns}/${REFUSED}-bmc belongs to host ${ns}/someone-else`);
    expect(refused.error).toContain('the source attached it again');
    // Back in A as it was, not paused, with a node of its own again; never created in B.
    const back = await waitFor(`${REFUSED} adopted again in A`, async () => {
      const v = await view(A, REFUSED);
      return atRest(v, 'provisioned') && v!.status.provisioning.ID !== before[REFUSED]!.status.provisioning.ID ? v : undefined;
    }, { timeoutMs: 300_000, intervalMs: 500 });
    expect(back.paused).toBeUndefined();
    expect(back.status.provisioning.image?.url).toBe(IMAGE.url);
    expect(await view(B, REFUSED)).toBeUndefined();

    for (const [state, name] of Object.entries(hosts)) {
      const there = await view(B, name);
      expect(atRest(there, state), JSON.stringify(there?.status)).toBe(true);
      expect(there!.status.provisioning.ID).not.toBe(before[name]!.status.provisioning.ID);
      expect(there!.status.provisioning.image?.url).toBe(before[name]!.status.provisioning.image?.url);
      expect(there!.labels).toEqual({ move: PIVOT });
      expect(there!.paused).toBeUndefined();
      expect(there!.operations.map((o) => o.kind)).not.toContain('provision');
      expect(there!.operations.map((o) => o.kind)).not.toContain('inspect');
      expect(await view(A, name)).toBeUndefined();
      // B's own store holds the credentials it registered the node with.
      expect((await B.h.secrets.read(ns, `${name}-bmc`))?.password).toBe(PASSWORD);
    }
    expect(Object.values((await B.h.secrets.read(ns, `${hosts.provisioned}-user-data`)) ?? {})).toContain(USER_DATA);

    const inB = B.proxy.requests.slice(sentB);
    const inA = A.proxy.requests.slice(sentA);
    const figures = {
      bDeploys: inB.filter(isDeploy).length,
      bVerbs: [...new Set(inB.map(provisionVerb).filter(Boolean))].sort(),
      bPowerOffsOrReboots: inB.filter((r) => isPowerChange(r) && !/"power on"/.test(r.body)).length,
      bNodeCreates: inB.filter((r) => r.method === 'POST' && r.path === '/v1/nodes').length,
      // Only the refused host's node again: the moved ones are not registered in A after the detach.
      aNodeCreates: inA.filter((r) => r.method === 'POST' && r.path === '/v1/nodes').length,
      aVerbs: [...new Set(inA.map(provisionVerb).filter(Boolean))].sort(),
      aPowerOffsOrReboots: inA.filter((r) => isPowerChange(r) && !/"power on"/.test(r.body)).length,
      aNodeDeletes: inA.filter((r) => r.method === 'DELETE' && /^\/v1\/nodes\/[^/]+$/.test(r.path)).length,
    };
    process.stderr.write(`[pivot-api-mode test] proxy figures: ${JSON.stringify(figures)}\n`);
    expect(figures).toEqual({ bDeploys: 0, bVerbs: ['adopt', 'manage'], bPowerOffsOrReboots: 0, bNodeCreates: 2, aNodeCreates: 1, aVerbs: ['adopt', 'manage'], aPowerOffsOrReboots: 0, aNodeDeletes: 3 });

    // The Secrets went store to store inside the hand-over activity: not in the pivot's history, decoded.
    const { hits, texts } = await secretsInHistories(A.h.client, [pivotWorkflowId(PIVOT)], [PASSWORD, 'planted-user-data', A.token, B.token]);
    expect(texts.some((t) => t.text.includes(`${hosts.provisioned}-bmc`))).toBe(true);
    expect(hits).toEqual([]);

    // And back B → A with the same workflow, run by plane B's worker: adopted in A again, no deploy.
    const BACK = uniq('api-back');
    const sentBackA = A.proxy.requests.length;
    const backStarted = await call(B, 'POST', '/v1/pivots', {
      name: BACK,
      source: { plane: 'plane-b' },
      target: { plane: 'plane-a' },
      selector: { hosts: [{ namespace: ns, name: hosts.provisioned }] },
      hostTimeoutSeconds: 600,
    });
    expect(backStarted.status, backStarted.text).toBe(201);
    const backResult = await waitFor('the pivot back ends', async () => {
      const p = JSON.parse((await call(B, 'GET', `/v1/pivots/${BACK}`)).text) as PivotProgress;
      return ['completed', 'halted', 'cancelled'].includes(p.phase) ? p : undefined;
    }, { timeoutMs: 600_000, intervalMs: 1000 });
    expect(backResult.counts, JSON.stringify(backResult.hosts)).toMatchObject({ succeeded: 1 });
    const home = await view(A, hosts.provisioned);
    expect(atRest(home, 'provisioned'), JSON.stringify(home?.status)).toBe(true);
    expect(home!.status.provisioning.image?.url).toBe(IMAGE.url);
    expect(await view(B, hosts.provisioned)).toBeUndefined();
    const backInA = A.proxy.requests.slice(sentBackA);
    const backFigures = { deploys: backInA.filter(isDeploy).length, verbs: [...new Set(backInA.map(provisionVerb).filter(Boolean))].sort(), powerOffsOrReboots: backInA.filter((r) => isPowerChange(r) && !/"power on"/.test(r.body)).length };
    process.stderr.write(`[pivot-api-mode test] back to A, A's proxy: ${JSON.stringify(backFigures)}\n`);
    expect(backFigures).toEqual({ deploys: 0, verbs: ['adopt', 'manage'], powerOffsOrReboots: 0 });
  });
});
