/**
 * Where the Kubernetes client finds its API server: a kubeconfig file when
 * one is given, else the pod's service account (in-cluster: the token, CA and
 * namespace files plus KUBERNETES_SERVICE_HOST/PORT), else none.
 */
import { existsSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** In-cluster settings when the pod's environment and service account files are there. */
export function inClusterSettings(env: NodeJS.ProcessEnv, dir = env.METALFLOW_SERVICE_ACCOUNT_DIR || SERVICE_ACCOUNT_DIR) {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  const tokenFile = join(dir, 'token');
  if (!host || !port || !existsSync(tokenFile)) return undefined;
  return { server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`, tokenFile, caFile: join(dir, 'ca.crt') };
}

/**
 * Load `kc` from the kubeconfig or in-cluster; false when neither is there.
 * The user's token is a tokenFile (as client-go does for projected tokens):
 * KubeRest and the library's FileAuth re-read it, so rotated tokens are used.
 */
export function loadKubeConfig(kc: KubeConfig, kubeconfig: string | undefined, env: NodeJS.ProcessEnv = process.env): boolean {
  if (kubeconfig) {
    kc.loadFromFile(kubeconfig);
    return true;
  }
  const inCluster = inClusterSettings(env);
  if (!inCluster) return false;
  kc.loadFromClusterAndUser(
    { name: 'in-cluster', server: inCluster.server, caFile: inCluster.caFile, skipTLSVerify: false },
    { name: 'in-cluster', authProvider: { name: 'tokenFile', config: { tokenFile: inCluster.tokenFile } } },
  );
  return true;
}
