/**
 * Kubernetes as a token source for the API: a bearer token the token file
 * does not know is sent to the API server's TokenReview, and the user and
 * groups it answers with are mapped to grants (METALFLOW_API_KUBE_ROLES).
 * Answers are cached briefly by the token's hash, never by the token.
 */
import { createHash } from 'node:crypto';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { parseGrants, type Grant, type Principal } from './roles';

interface RoleMapping {
  kind: 'user' | 'group';
  name: string;
  grants: Grant[];
}

interface TokenReviewStatus {
  status?: { authenticated?: boolean; user?: { username?: string; groups?: string[] }; error?: string };
}

/**
 * `group:<name>=<role:namespace,...>;user:<name>=<...>`; names may hold
 * colons (system:serviceaccount:ns:sa), so `=` ends them.
 */
export function parseKubeRoles(text: string): RoleMapping[] {
  return text
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((item) => {
      const m = /^(user|group):([^=]+)=(.+)$/.exec(item);
      if (!m) throw new Error(`METALFLOW_API_KUBE_ROLES: "${item}" is not user:<name>=<grants> or group:<name>=<grants>`);
      return { kind: m[1] as 'user' | 'group', name: m[2]!, grants: parseGrants(m[3]!, 'METALFLOW_API_KUBE_ROLES') };
    });
}

export class TokenReviewer {
  private readonly cache = new Map<string, { at: number; principal: Principal | undefined }>();

  constructor(
    private readonly rest: KubeRest,
    private readonly roles: RoleMapping[],
    private readonly cacheMs = 10_000,
  ) {}

  async review(token: string): Promise<Principal | undefined> {
    const key = createHash('sha256').update(token).digest('hex');
    const hit = this.cache.get(key);
    if (hit && Date.now() - hit.at < this.cacheMs) return hit.principal;
    const r = await this.rest.call<TokenReviewStatus>('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
    });
    const user = r.status?.authenticated ? r.status.user : undefined;
    const principal = user?.username
      ? {
          subject: user.username,
          via: 'kubernetes' as const,
          grants: this.roles
            .filter((m) => (m.kind === 'user' ? m.name === user.username : (user.groups ?? []).includes(m.name)))
            .flatMap((m) => m.grants),
        }
      : undefined;
    if (this.cache.size > 1000) this.cache.clear();
    this.cache.set(key, { at: Date.now(), principal });
    return principal;
  }
}
