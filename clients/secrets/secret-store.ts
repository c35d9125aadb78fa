/**
 * Where secret values live. Workflows only ever hold a secret's namespace and
 * name; activities read the values at the moment they use them.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { FAILURE } from '../../types/failures';

export type SecretData = Record<string, string>;

export interface SecretReader {
  read(namespace: string, name: string): Promise<SecretData | undefined>;
}

export interface SecretStore extends SecretReader {
  /** The longest secret name it can hold, when shorter than Kubernetes' 253. */
  readonly maxNameLength?: number;
  /** `owner`: the host (`namespace/name`) the secret was written for, recorded with it. */
  write(namespace: string, name: string, data: SecretData, owner?: string): Promise<void>;
  remove(namespace: string, name: string): Promise<void>;
  /** The recorded owner; null for a secret stored without one, undefined when there is no such secret. */
  ownerOf(namespace: string, name: string): Promise<string | null | undefined>;
  /** Names of the namespace's secrets recorded as `owner`'s. */
  ownedBy(namespace: string, owner: string): Promise<string[]>;
}

/**
 * Reads one key of a secret, trying `keys` in order (Metal3 accepts e.g.
 * `userData` or `value`). A missing secret or key is a non-retryable failure
 * whose message names both, and never the value.
 */
export async function readSecretKey(
  secrets: SecretReader,
  namespace: string,
  name: string,
  keys: readonly string[],
): Promise<string> {
  const data = await secrets.read(namespace, name);
  if (!data) {
    throw ApplicationFailure.nonRetryable(`Secret ${namespace}/${name} not found`, FAILURE.secretMissing);
  }
  for (const key of keys) {
    const value = data[key];
    if (typeof value === 'string' && value !== '') return value;
  }
  throw ApplicationFailure.nonRetryable(
    `Secret ${namespace}/${name} has no non-empty key ${keys.map((k) => `"${k}"`).join(' or ')}`,
    FAILURE.secretMissing,
  );
}
