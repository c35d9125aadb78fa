/**
 * A pivot's planes come from the operator's registry (METALFLOW_PIVOT_PLANES),
 * never from the caller: each attack a pivot's input once allowed is planted
 * here and refused with nothing read, run or sent. A planted listener stands
 * where the credentials would go and must see no request; an `exec`
 * kubeconfig would create a marker file and must not run.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkflowFailedError } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { createPivotActivities } from '../../activities/pivot/activities';
import { kubeconfigProblem, resolvePlane } from '../../activities/pivot/planes';
import { parsePivotPlanes, type PivotPlaneRegistry } from '../../config/pivot-planes';
import { pivotWorkflowId } from '../../contracts/pivot';
import { callApi, serveApi } from '../support/api-client';
import { startHarness, uniq, type Harness } from '../support/harness';

const dir = mkdtempSync(join(tmpdir(), 'metalflow-plane-trust-'));
/** A token the worker can read: what a caller once could make it send anywhere. */
const TOKEN_FILE = join(dir, 'worker-token');
writeFileSync(TOKEN_FILE, 'planted-worker-token\n', { mode: 0o600 });

let listener: Server;
let listenerUrl: string;
const seen: Array<{ method?: string; url?: string; authorization?: string }> = [];
let h: Harness;
let app: FastifyInstance;
let base: string;
let planes: PivotPlaneRegistry;

const kubeconfig = (server: string, user: Record<string, unknown>): string =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    // Plain HTTP (the listener) needs insecure-skip-tls-verify to be accepted by the client at all.
    clusters: [{ name: 'c', cluster: { server, 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  });

beforeAll(async () => {
  listener = createServer((req: IncomingMessage, res) => {
    seen.push({ method: req.method, url: req.url, authorization: req.headers.authorization });
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"kind":"Status","message":"planted listener"}');
  });
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
  listenerUrl = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
  const marker = join(dir, 'exec-ran');
  const files = {
    exec: join(dir, 'exec.kubeconfig'),
    unlisted: join(dir, 'unlisted.kubeconfig'),
    clean: join(dir, 'clean.kubeconfig'),
  };
  // The listener is allowed here: only the exec check stands between this kubeconfig and a command run on the worker.
  writeFileSync(files.exec, kubeconfig(listenerUrl, { exec: { apiVersion: 'client.authentication.k8s.io/v1beta1', command: '/bin/sh', args: ['-c', `touch ${marker}`] } }));
  writeFileSync(files.unlisted, kubeconfig('http://127.0.0.2:1', { token: 'x' }));
  writeFileSync(files.clean, kubeconfig(listenerUrl, { token: 'registered-plane-token' }));
  planes = parsePivotPlanes(
    JSON.stringify({
      allowedUrls: [listenerUrl],
      planes: {
        'exec-plane': { kubeconfig: files.exec },
        'unlisted-plane': { kubeconfig: files.unlisted },
        'clean-plane': { kubeconfig: files.clean, taskQueue: 'tq-clean' },
        'api-plane': { api: { url: listenerUrl, tokenFile: TOKEN_FILE } },
      },
    }),
    'the test registry',
  );
  h = await startHarness({ pivotPlanes: planes });
  ({ app, base } = await serveApi(h.hosts, { pivotPlanes: planes }));
});
afterAll(async () => {
  await app?.close();
  await h?.close();
  listener?.close();
});

const markerFile = () => join(dir, 'exec-ran');

describe('pivot planes only from the operator', () => {
  it('the API refuses a token file path, a foreign Secret, a kubeconfig path, an unknown or mixed plane: 400 naming the field, nothing started', async () => {
    const attempts: Array<[unknown, unknown, string]> = [
      [{ api: { url: listenerUrl, tokenFile: TOKEN_FILE } }, { api: { url: 'http://127.0.0.1:9', tokenFile: TOKEN_FILE } }, 'source.api'],
      [{}, { kubeconfigSecret: { namespace: 'kube-system', name: 'admin-kubeconfig' } }, 'target.kubeconfigSecret'],
      [{}, { kubeconfig: '/root/.kube/config', taskQueue: 'q' }, 'target.kubeconfig'],
      [{}, { plane: 'nowhere' }, 'target.plane'],
      [{}, { plane: 'api-plane' }, 'target.plane'],
    ];
    for (const [source, target, field] of attempts) {
      const name = uniq('trust');
      const res = await callApi(base, 'POST', '/v1/pivots', { name, source, target, selector: { namespace: 'metal3' } });
      expect(res.status, res.text).toBe(400);
      expect((res.json as { fields: Array<{ field: string }> }).fields.map((f) => f.field)).toContain(field);
      expect((await callApi(base, 'GET', `/v1/pivots/${name}`)).status).toBe(404);
    }
    expect(seen).toEqual([]);
  });

  it('a pivot started through Temporal with a token file and a URL of its own fails its input check: nothing read or sent', async () => {
    const name = uniq('trust');
    const handle = await h.client.workflow.start('pivotWorkflow', {
      taskQueue: h.taskQueue,
      workflowId: pivotWorkflowId(name),
      args: [{ name, source: { api: { url: listenerUrl, tokenFile: TOKEN_FILE } }, target: { api: { url: 'http://127.0.0.1:9', tokenFile: TOKEN_FILE } }, selector: { namespace: 'metal3' } }],
    });
    const err = await handle.result().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(String((err as WorkflowFailedError).cause?.message)).toMatch(/source\.api: is not accepted: name a plane the operator registered/);
    expect(seen).toEqual([]);
  });

  it('the worker refuses what the input names itself, an exec kubeconfig and an unlisted API server, before any request or command', async () => {
    const acts = createPivotActivities({ planes });
    const selector = { namespace: 'metal3' };
    // A run started before ids, naming a token file and URL no plane is registered with.
    await expect(acts.selectPivotHosts({ source: { api: { url: listenerUrl, tokenFile: join(dir, 'other-token') } }, selector })).rejects.toThrow(/register the plane in the test registry .* and name it by id/);
    await expect(acts.selectPivotHosts({ source: { kubeconfig: '/root/.kube/config' }, selector })).rejects.toThrow(/no longer accepted/);
    await expect(acts.selectPivotHosts({ source: { plane: 'exec-plane' }, selector })).rejects.toThrow(/users\[0\]\.user\.exec is not accepted \(it would run a command on the worker\)/);
    expect(existsSync(markerFile())).toBe(false);
    await expect(acts.selectPivotHosts({ source: { plane: 'unlisted-plane' }, selector })).rejects.toThrow(/points at http:\/\/127\.0\.0\.2:1, which is not on allowedUrls/);
    await expect(acts.precheckPivotHost({ pivot: 'p', ref: { namespace: 'metal3', name: 'h' }, source: {}, target: { plane: 'api-plane' } })).rejects.toThrow(/both be metalflow API planes or both Kubernetes planes/);
    expect(seen).toEqual([]);
  });

  it('a registered, allowed plane is used (the listener sees the registered token), and a run from before ids finds it by its kubeconfig', async () => {
    const acts = createPivotActivities({ planes });
    await expect(acts.selectPivotHosts({ source: { plane: 'clean-plane' }, selector: { namespace: 'metal3' } })).rejects.toThrow(/planted listener/);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((r) => r.authorization === 'Bearer registered-plane-token')).toBe(true);
    const legacy = resolvePlane({ planes }, { kubeconfig: planes.planes.get('clean-plane')!.kubeconfig!, taskQueue: 'ignored' }, 'target');
    expect(legacy).toMatchObject({ id: 'clean-plane', taskQueue: 'tq-clean' });
  });

  it('a kubeconfig from a Secret may name no file: token-file, client key or certificate, CA file, proxy', () => {
    const server = 'https://mgmt.example:6443';
    expect(kubeconfigProblem(kubeconfig(server, { token: 't' }), true)).toBeUndefined();
    expect(kubeconfigProblem(kubeconfig(server, { 'token-file': '/var/run/secrets/kubernetes.io/serviceaccount/token' }), true)).toMatch(/token-file is not accepted from a Secret/);
    expect(kubeconfigProblem(kubeconfig(server, { 'client-key': '/etc/kubernetes/pki/admin.key' }), true)).toMatch(/client-key is not accepted from a Secret/);
    expect(kubeconfigProblem(kubeconfig(server, { 'auth-provider': { name: 'oidc' } }), false)).toMatch(/auth-provider is not accepted/);
    const withCa = JSON.parse(kubeconfig(server, { token: 't' })) as { clusters: Array<{ cluster: Record<string, string> }> };
    withCa.clusters[0]!.cluster['certificate-authority'] = '/etc/kubernetes/pki/ca.crt';
    expect(kubeconfigProblem(JSON.stringify(withCa), true)).toMatch(/certificate-authority is not accepted from a Secret/);
    expect(kubeconfigProblem(JSON.stringify(withCa), false)).toBeUndefined();
  });

  it('the registry refuses an API plane whose URL is not allowed, at start', () => {
    expect(() => parsePivotPlanes(JSON.stringify({ allowedUrls: [], planes: { x: { api: { url: 'http://169.254.169.254', tokenFile: '/t' } } } }), 'f')).toThrow(/planes\.x\.api\.url: http:\/\/169\.254\.169\.254:80 is not on allowedUrls/);
    expect(() => parsePivotPlanes(JSON.stringify({ planes: { x: { kubeconfig: 'relative/path' } } }), 'f')).toThrow(/planes\.x\.kubeconfig: must be an absolute path/);
  });
});
