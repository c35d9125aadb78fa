/**
 * Registry credentials for an `oci://` image, read from a Docker config
 * Secret (`.dockerconfigjson`, or the legacy `.dockercfg`) as Metal3 reads
 * them (BMO `pkg/secretutils/dockerconfig.go`): the entry for the image's
 * registry, handed to Ironic as `user:password` in `image_pull_secret`.
 * Reasons name the Secret, the key and the registry, never a value.
 */
import type { SecretData } from './secret-store';

interface AuthEntry {
  auth?: unknown;
  username?: unknown;
  password?: unknown;
}

/** Docker Hub's names for one registry, as the Docker CLI resolves them. */
const DOCKER_HUB = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);

/** A config key (`quay.example`, `https://quay.example/v1/`, `quay.example:5000`) reduced to host[:port], lower case. */
function registryOf(key: string): string {
  const host = key.replace(/^[a-z]+:\/\//i, '').split('/')[0] ?? '';
  const lower = host.toLowerCase();
  return DOCKER_HUB.has(lower) ? 'docker.io' : lower;
}

/** The registry (host[:port]) of an oci:// URL. */
export function registryOfUrl(url: string): string {
  return registryOf(url.replace(/^oci:\/\//i, ''));
}

function entries(data: SecretData): { key: string; auths: Record<string, AuthEntry> } | { error: string } {
  const [key, raw] = data['.dockerconfigjson'] !== undefined ? ['.dockerconfigjson', data['.dockerconfigjson']] : ['.dockercfg', data['.dockercfg']];
  if (raw === undefined) return { error: 'has neither a .dockerconfigjson nor a .dockercfg key (a kubernetes.io/dockerconfigjson Secret is expected)' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { error: `has a ${key} that is not JSON` };
  }
  const auths = key === '.dockerconfigjson' ? (parsed as { auths?: unknown } | null)?.auths : parsed;
  if (typeof auths !== 'object' || auths === null || Array.isArray(auths)) return { error: `has a ${key} without an "auths" object` };
  return { key, auths: auths as Record<string, AuthEntry> };
}

/** `user:password` for the image's registry, or why there is none. */
export function registryCredentials(data: SecretData, imageUrl: string): { value: string } | { error: string } {
  const found = entries(data);
  if ('error' in found) return found;
  const registry = registryOfUrl(imageUrl);
  const entry = Object.entries(found.auths).find(([key]) => registryOf(key) === registry)?.[1];
  if (!entry) return { error: `has no entry for registry ${registry} in its ${found.key}` };
  if (typeof entry.username === 'string' && typeof entry.password === 'string' && (entry.username || entry.password)) {
    return { value: `${entry.username}:${entry.password}` };
  }
  if (typeof entry.auth === 'string') {
    const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
    if (decoded.includes(':')) return { value: decoded };
  }
  return { error: `has an entry for registry ${registry} with neither "auth" (base64 of user:password) nor "username" and "password"` };
}
