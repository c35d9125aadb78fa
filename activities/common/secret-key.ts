/**
 * A secret's key as activities read it: a missing secret or key is the
 * failure the workflow treats as the host's (SecretMissing). Here, not in
 * clients/, so the store itself knows nothing of Temporal.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { FAILURE } from '../../model/failures';
import type { SecretReader } from '../../clients/secrets/secret-store';

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
  // A site's own store says so: the operator is told which store to put the Secret in.
  const where = secrets.where ? ` ${secrets.where}` : '';
  if (!data) {
    throw ApplicationFailure.nonRetryable(`Secret ${namespace}/${name} not found${where}`, FAILURE.secretMissing);
  }
  for (const key of keys) {
    const value = data[key];
    if (typeof value === 'string' && value !== '') return value;
  }
  throw ApplicationFailure.nonRetryable(
    `Secret ${namespace}/${name} has no non-empty key ${keys.map((k) => `"${k}"`).join(' or ')}${where}`,
    FAILURE.secretMissing,
  );
}
