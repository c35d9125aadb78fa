/**
 * A secret's key as activities read it: a missing secret or key is the
 * failure the workflow treats as the host's (SecretMissing). Here, not in
 * clients/, so the store itself knows nothing of Temporal.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { FAILURE } from '../../model/failures';
import type { SecretData, SecretReader } from '../../clients/secrets/secret-store';

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
  return keyOf(secrets, namespace, name, await readData(secrets, namespace, name), keys);
}

/**
 * BMC credentials (`username`, `password`) from one read of their Secret: two reads gave the same Secret to one
 * use (in Kubernetes mode a GET of the API server each), and could even mix two versions of it.
 */
export async function readCredentials(secrets: SecretReader, namespace: string, name: string): Promise<{ username: string; password: string }> {
  const data = await readData(secrets, namespace, name);
  return { username: keyOf(secrets, namespace, name, data, ['username']), password: keyOf(secrets, namespace, name, data, ['password']) };
}

/** A site's own store says so in its errors: the operator is told which store to put the Secret in. */
const whereOf = (secrets: SecretReader): string => (secrets.where ? ` ${secrets.where}` : '');

async function readData(secrets: SecretReader, namespace: string, name: string): Promise<SecretData> {
  const data = await secrets.read(namespace, name);
  if (!data) {
    throw ApplicationFailure.nonRetryable(`Secret ${namespace}/${name} not found${whereOf(secrets)}`, FAILURE.secretMissing);
  }
  return data;
}

function keyOf(secrets: SecretReader, namespace: string, name: string, data: SecretData, keys: readonly string[]): string {
  for (const key of keys) {
    const value = data[key];
    if (typeof value === 'string' && value !== '') return value;
  }
  throw ApplicationFailure.nonRetryable(
    `Secret ${namespace}/${name} has no non-empty key ${keys.map((k) => `"${k}"`).join(' or ')}${whereOf(secrets)}`,
    FAILURE.secretMissing,
  );
}
