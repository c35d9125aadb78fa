/**
 * The API with Kubernetes as its token source: a ServiceAccount token from
 * the TokenRequest API is reviewed by the real kube-apiserver (TokenReview)
 * and its user and groups mapped to roles (METALFLOW_API_KUBE_ROLES).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeConfig } from '@kubernetes/client-node';
import type { FastifyInstance } from 'fastify';
import { KubeRest } from '../../clients/kubernetes/kube-rest';
import { parseKubeRoles, TokenReviewer } from '../../api/auth/token-review';
import { loadAuthOptions } from '../../api/auth/options';
import { buildServer } from '../../api/server';
import { callApi } from '../support/api-client';
import { startHarness, type Harness } from '../support/harness';
import { KUBE_BUILD_TIMEOUT_MS, KUBECONFIG, kubectl, useKube, type KubeLease } from './kube-harness';

const NS = `review-${process.pid}`;
let kube: KubeLease | undefined;
let h: Harness;
let app: FastifyInstance;
let base: string;

const tokenFor = (sa: string): string => kubectl(['create', 'token', sa, '-n', NS, '--duration=10m']).stdout.trim();

beforeAll(async () => {
  kube = useKube();
  kubectl(['create', 'namespace', NS]);
  kubectl(['create', 'serviceaccount', 'ops', '-n', NS]);
  kubectl(['create', 'serviceaccount', 'nobody', '-n', NS]);
  h = await startHarness();
  const kc = new KubeConfig();
  kc.loadFromFile(KUBECONFIG);
  const roles = parseKubeRoles(`user:system:serviceaccount:${NS}:ops=operator:lab;group:system:serviceaccounts:${NS}=viewer:shared`);
  // No token file: Kubernetes is the only token source.
  const auth = loadAuthOptions({}, '127.0.0.1', () => undefined, new TokenReviewer(await KubeRest.create(kc), roles));
  app = await buildServer(h.hosts, { auth });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
}, KUBE_BUILD_TIMEOUT_MS);

afterAll(async () => {
  await app?.close();
  await h?.close();
  kube?.release();
});

describe('API tokens reviewed by Kubernetes', { timeout: 120_000 }, () => {
  it('maps a ServiceAccount token to roles by user and group; an unknown token is a 401', async () => {
    const ops = tokenFor('ops');
    const nobody = tokenFor('nobody');
    expect((await callApi(base, 'GET', '/v1/hosts?namespace=lab', undefined, { token: ops })).status).toBe(200);
    expect((await callApi(base, 'GET', '/v1/hosts?namespace=shared', undefined, { token: ops })).status).toBe(200);
    const denied = await callApi(base, 'DELETE', '/v1/namespaces/lab/hosts/x', undefined, { token: ops });
    expect(denied.status).toBe(403);
    expect(denied.json.message).toContain(`system:serviceaccount:${NS}:ops may not DELETE`);
    // Only the group grant: viewer in shared.
    expect((await callApi(base, 'GET', '/v1/hosts?namespace=shared', undefined, { token: nobody })).status).toBe(200);
    expect((await callApi(base, 'GET', '/v1/hosts?namespace=lab', undefined, { token: nobody })).status).toBe(403);
    const bad = await callApi(base, 'GET', '/v1/hosts', undefined, { token: 'not-a-kubernetes-token' });
    expect(bad.status).toBe(401);
    expect(bad.json.error).toBe('Unauthorized');
  });
});
