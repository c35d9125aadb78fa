/** Secrets read from Kubernetes at the moment of use (Metal3's credentialsName, userData, ...). */
import { isKubeError } from '../kubernetes/kube-error';
import type { KubeRest } from '../kubernetes/kube-rest';
import type { SecretData, SecretReader } from './secret-store';

export class KubernetesSecretReader implements SecretReader {
  constructor(private readonly rest: KubeRest) {}

  async read(namespace: string, name: string): Promise<SecretData | undefined> {
    let secret: { data?: Record<string, string>; stringData?: Record<string, string> };
    try {
      secret = await this.rest.call('GET', `/api/v1/namespaces/${namespace}/secrets/${name}`);
    } catch (err) {
      if (isKubeError(err, 'not-found')) return undefined;
      throw err;
    }
    const out: SecretData = {};
    for (const [k, v] of Object.entries(secret.data ?? {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
    return out;
  }
}
