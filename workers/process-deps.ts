/**
 * What the worker processes (main.ts, site-main.ts) build alike from their configuration.
 */
import type { MetalflowConfig } from '../config/env';
import { readTlsFiles } from '../clients/tls/files';
import type { KubeRest } from '../clients/kubernetes/kube-rest';
import { inClusterSettings, loadKubeConfig } from '../clients/kubernetes/kube-config';

/** The worker's API server client in Kubernetes mode (a kubeconfig, or a pod's service account); undefined otherwise. */

export async function kubernetesMode(kubeconfig: string | undefined): Promise<KubeRest | undefined> {
  // Kubernetes mode with a kubeconfig, or in a pod with its service account (KUBERNETES_SERVICE_HOST and the token file).
  if (!kubeconfig && !inClusterSettings(process.env)) return undefined;
  // Loaded only in Kubernetes mode: the client library is a sizeable share of an idle worker's memory.
  const { KubeConfig } = await import('@kubernetes/client-node');
  const { KubeRest } = await import('../clients/kubernetes/kube-rest');
  const kc = new KubeConfig();
  loadKubeConfig(kc, kubeconfig);
  return KubeRest.create(kc);
}

/** What the central worker and a site worker take alike from the environment: inspection, and the CAs of the BMCs and image URLs. */
export function peerSettings(config: MetalflowConfig): { inspection: MetalflowConfig['inspection']; redfishVerifyCa?: string; bmcCa?: Buffer; imageCa?: Buffer } {
  return {
    inspection: config.inspection,
    redfishVerifyCa: config.ironicRedfishVerifyCa,
    ...(config.bmcCaFile ? { bmcCa: readTlsFiles({ caFile: config.bmcCaFile }).ca } : {}),
    ...(config.imageCaFile ? { imageCa: readTlsFiles({ caFile: config.imageCaFile }).ca } : {}),
  };
}
