/**
 * On the test kube-apiserver: a pivot plane whose kubeconfig is a Secret
 * (whose content a namespace admin may write) cannot make the worker run a
 * command, read its own service-account token file, or talk to an API server
 * not on allowedUrls; and a Kubernetes write the API server refuses is typed
 * KubernetesRejected, final (it was typed as an Ironic refusal).
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { KubeRest } from '../../clients/kubernetes/kube-rest';
import { createPivotActivities } from '../../activities/pivot/activities';
import { createKubernetesActivities } from '../../activities/kubernetes/host-status';
import { parsePivotPlanes } from '../../config/pivot-planes';
import { FAILURE } from '../../model/failures';
import { uniq } from '../support/harness';
import { adminKubeRest, KUBE_BUILD_TIMEOUT_MS, kubectl, useKube, type KubeLease } from './kube-harness';

const NS = uniq('plane-secret');
const dir = mkdtempSync(join(tmpdir(), 'metalflow-plane-secret-'));
const marker = join(dir, 'exec-ran');
let kube: KubeLease;
let rest: KubeRest;
let server: string;

const kubeconfigText = (user: Record<string, unknown>, at = server) =>
  JSON.stringify({ apiVersion: 'v1', kind: 'Config', clusters: [{ name: 'c', cluster: { server: at, 'insecure-skip-tls-verify': true } }], users: [{ name: 'u', user }], contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }], 'current-context': 'x' });

function secret(name: string, value: string): void {
  kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: NS }, stringData: { value } }) });
}

beforeAll(async () => {
  kube = useKube();
  kubectl(['create', 'namespace', NS]);
  ({ rest, server } = await adminKubeRest());
  secret('exec', kubeconfigText({ exec: { apiVersion: 'client.authentication.k8s.io/v1beta1', command: '/bin/sh', args: ['-c', `touch ${marker}`] } }));
  secret('token-file', kubeconfigText({ 'token-file': '/var/run/secrets/kubernetes.io/serviceaccount/token' }));
  secret('unlisted', kubeconfigText({ token: 'x' }, 'https://127.0.0.3:6443'));
}, KUBE_BUILD_TIMEOUT_MS);
afterAll(() => {
  kubectl(['delete', 'namespace', NS, '--wait=false'], { check: false });
  kube?.release();
});

describe('a plane kubeconfig from a Secret', () => {
  it('with exec, token-file or an unlisted server is refused before anything runs, is read or is sent', async () => {
    const planes = parsePivotPlanes(
      JSON.stringify({
        allowedUrls: [server],
        planes: Object.fromEntries(['exec', 'token-file', 'unlisted'].map((n) => [n, { kubeconfigSecret: { namespace: NS, name: n } }])),
      }),
      'the test registry',
    );
    const acts = createPivotActivities({ rest, planes });
    const select = (plane: string) => acts.selectPivotHosts({ source: { plane }, selector: { namespace: NS } });
    await expect(select('exec')).rejects.toThrow(/users\[0\]\.user\.exec is not accepted \(it would run a command on the worker\)/);
    expect(existsSync(marker)).toBe(false);
    await expect(select('token-file')).rejects.toThrow(/users\[0\]\.user\.token-file is not accepted from a Secret/);
    await expect(select('unlisted')).rejects.toThrow(/points at https:\/\/127\.0\.0\.3:6443, which is not on allowedUrls/);
  });
});

describe('Kubernetes refusals', () => {
  it('a status write the API server forbids is KubernetesRejected, final', async () => {
    const sa = 'no-rights';
    kubectl(['create', 'serviceaccount', sa, '-n', NS]);
    const token = kubectl(['create', 'token', sa, '-n', NS]).stdout.trim();
    const kc = new KubeConfig();
    kc.loadFromString(kubeconfigText({ token }));
    const weak = await KubeRest.create(kc);
    const { publishHostStatus } = createKubernetesActivities({ rest: weak });
    const err = await publishHostStatus({ ref: { namespace: NS, name: 'h' }, status: {} as never }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toMatchObject({ type: FAILURE.kubernetesRejected, nonRetryable: true });
    expect((err as Error).message).toMatch(/403/);
  });
});
