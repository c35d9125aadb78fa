/** A test file's own namespace on the shared API server and a KubeRest on it as admin, as hooks. */
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll } from 'vitest';
import { KubeRest } from '../../clients/kubernetes/kube-rest';
import { KUBE_BUILD_TIMEOUT_MS, KUBECONFIG, kubectl, useKube, type KubeLease } from './kube-harness';

export function useKubeRest(namespace: string): { readonly rest: KubeRest } {
  let kube: KubeLease | undefined;
  let rest: KubeRest | undefined;
  beforeAll(async () => {
    kube = useKube();
    kubectl(['create', 'namespace', namespace]);
    const kc = new KubeConfig();
    kc.loadFromFile(KUBECONFIG);
    rest = await KubeRest.create(kc);
  }, KUBE_BUILD_TIMEOUT_MS);
  afterAll(() => kube?.release());
  return {
    get rest() {
      if (!rest) throw new Error('the API server is not set up yet');
      return rest;
    },
  };
}
