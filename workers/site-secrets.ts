/**
 * Where a site worker reads its hosts' BMC credentials (docs/sites.md,
 * *Credentials*). A site whose sites-file entry says `"secrets": "site"` holds
 * them in a store of its own, which no central process reads or writes:
 *
 * - API mode: a local secret store (the format of METALFLOW_SECRET_DIR) at
 *   METALFLOW_SITE_SECRET_DIR, its key METALFLOW_SITE_SECRET_KEY, or the file
 *   METALFLOW_SITE_SECRET_KEY_FILE (default `<dir>.key`);
 * - Kubernetes mode: the Secrets of the site's own cluster, same namespace and
 *   name as the host's `spec.bmc.credentialsName`, through
 *   METALFLOW_SITE_SECRETS_KUBECONFIG or else the pod's service account. Never
 *   METALFLOW_KUBECONFIG: that reaches the management cluster, the central store.
 *
 * User, network and meta data stay where they are written (the central store):
 * the central plane writes them itself (CAPM3 renders them in the management
 * cluster, API callers send them inline), so holding them at the site would hide
 * nothing from it; BMC credentials are what it never needs to know.
 */
import type { Site } from '../model/site';
import { LocalSecretStore, loadSecretKey } from '../clients/secrets/local-store';
import { KubernetesSecretReader } from '../clients/secrets/kube-store';
import { siteSecretDirSettings } from '../config/site-secret-dir';
import { namedStore, type SecretReader } from '../clients/secrets/secret-store';
import { inClusterSettings, loadKubeConfig } from '../clients/kubernetes/kube-config';

/**
 * The reader of the site's hosts' BMC credentials: undefined for a site whose credentials are central
 * (the worker's own `secrets` then reads them, as before). `kubernetes`: whether the worker runs in Kubernetes mode.
 */
export async function siteCredentialStore(site: Site, env: NodeJS.ProcessEnv, kubernetes: boolean): Promise<{ reader: SecretReader; describe: string } | undefined> {
  if (site.secrets !== 'site') return undefined;
  const where = `in the secret store of site "${site.name}"`;
  if (!kubernetes) {
    const s = siteSecretDirSettings(site.name, env);
    const store = new LocalSecretStore(s.dir, loadSecretKey({ ...(s.key ? { key: s.key } : {}), keyFile: s.keyFile, createIfMissing: true }));
    return { reader: namedStore(store, `${where} (METALFLOW_SITE_SECRET_DIR ${s.dir})`), describe: `the site's own secret store ${s.dir}` };
  }
  const kubeconfig = env.METALFLOW_SITE_SECRETS_KUBECONFIG?.trim() || undefined;
  if (!kubeconfig && !inClusterSettings(env)) {
    throw new Error(
      `site "${site.name}" holds its BMC credentials at the site ("secrets": "site" in METALFLOW_SITES_FILE): this Kubernetes-mode site worker needs the site cluster's Secrets, through METALFLOW_SITE_SECRETS_KUBECONFIG or a pod service account allowed to get Secrets (METALFLOW_KUBECONFIG is the management cluster's, the central store)`,
    );
  }
  const { KubeConfig } = await import('@kubernetes/client-node');
  const { KubeRest } = await import('../clients/kubernetes/kube-rest');
  const kc = new KubeConfig();
  loadKubeConfig(kc, kubeconfig, env);
  const cluster = kubeconfig ? `the cluster of METALFLOW_SITE_SECRETS_KUBECONFIG ${kubeconfig}` : "the site cluster of the pod's service account";
  return { reader: namedStore(new KubernetesSecretReader(await KubeRest.create(kc)), `${where} (${cluster})`), describe: `Secrets of ${cluster}` };
}
