/**
 * Service-account tokens against the real kube-apiserver: a token file
 * rewritten with a new token is used after the refresh interval (as client-go
 * does for projected tokens, which rotate), a refused token gives a clear 401
 * that names the file, and worker/controller load in-cluster config from a
 * service-account folder plus KUBERNETES_SERVICE_HOST/PORT.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeRest } from '../../clients/kubernetes/kube-rest';
import { KubeError } from '../../clients/kubernetes/kube-error';
import { inClusterSettings, loadKubeConfig } from '../../clients/kubernetes/kube-config';
import { KUBE_BUILD_TIMEOUT_MS, KUBE_PORTS, KUBE_STATE_DIR, kubectl, useKube, type KubeLease } from './kube-harness';

const NS = `tokens-${process.pid}`;
let kube: KubeLease | undefined;
let dir: string;
let env: NodeJS.ProcessEnv;

const tokenFor = (sa: string): string => kubectl(['create', 'token', sa, '-n', NS, '--duration=10m']).stdout.trim();

beforeAll(() => {
  kube = useKube();
  kubectl(['create', 'namespace', NS]);
  kubectl(['create', 'serviceaccount', 'first', '-n', NS]);
  kubectl(['create', 'serviceaccount', 'second', '-n', NS]);
  // A pod's service-account folder, pointing at the local API server.
  dir = mkdtempSync(join(tmpdir(), 'metalflow-sa-'));
  copyFileSync(join(KUBE_STATE_DIR, 'pki', 'ca.crt'), join(dir, 'ca.crt'));
  writeFileSync(join(dir, 'namespace'), NS);
  writeFileSync(join(dir, 'token'), tokenFor('first'));
  env = { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(KUBE_PORTS.api), METALFLOW_SERVICE_ACCOUNT_DIR: dir };
}, KUBE_BUILD_TIMEOUT_MS);

afterAll(() => {
  // The namespace stays: without a controller-manager a deleted one never finishes terminating.
  kube?.release();
});

/** Who the API server says the caller is: any authenticated caller may ask. */
async function whoami(rest: KubeRest): Promise<string> {
  const r = await rest.call<{ status: { userInfo: { username: string } } }>('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  return r.status.userInfo.username;
}

describe('Kubernetes tokens and in-cluster config', { timeout: 120_000 }, () => {
  it('loads in-cluster config only when the environment and the token file are there', () => {
    expect(loadKubeConfig(new KubeConfig(), undefined, {})).toBe(false);
    expect(inClusterSettings({ ...env, METALFLOW_SERVICE_ACCOUNT_DIR: join(dir, 'missing') })).toBeUndefined();
    expect(inClusterSettings(env)).toEqual({ server: `https://127.0.0.1:${KUBE_PORTS.api}`, tokenFile: join(dir, 'token'), caFile: join(dir, 'ca.crt') });
  });

  it('uses a rotated token after the refresh interval, and reports a refused one with a clear 401', async () => {
    writeFileSync(join(dir, 'token'), tokenFor('first'));
    const kc = new KubeConfig();
    expect(loadKubeConfig(kc, undefined, env)).toBe(true);
    let now = 0;
    // Over TLS checked against the folder's CA: a wrong CA would fail here.
    const rest = await KubeRest.create(kc, { tokenRefreshMs: 60_000, now: () => now });
    expect(await whoami(rest)).toBe(`system:serviceaccount:${NS}:first`);

    writeFileSync(join(dir, 'token'), tokenFor('second'));
    now += 59_000;
    expect(await whoami(rest)).toBe(`system:serviceaccount:${NS}:first`);
    now += 1_000;
    expect(await whoami(rest)).toBe(`system:serviceaccount:${NS}:second`);

    writeFileSync(join(dir, 'token'), 'not-a-valid-token');
    now += 60_000;
    const refused = await whoami(rest).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(KubeError);
    expect((refused as KubeError).status).toBe(401);
    expect((refused as KubeError).message).toContain(`the token from ${join(dir, 'token')} was refused`);

    // After a 401 the file is read again at once: the rotation that lands next is used without waiting.
    writeFileSync(join(dir, 'token'), tokenFor('first'));
    expect(await whoami(rest)).toBe(`system:serviceaccount:${NS}:first`);
  });
});
