/**
 * Where secret values live. Workflows only ever hold a secret's namespace and
 * name; activities read the values at the moment they use them.
 */
import type { Lease, LeaseOptions } from './file-lease';

export type SecretData = Record<string, string>;
export type { Lease, LeaseOptions } from './file-lease';

export interface SecretReader {
  read(namespace: string, name: string): Promise<SecretData | undefined>;
  /** Which store this is, for errors that name a missing Secret (e.g. `in the secret store of site "edge-1"`); unset: the central one. */
  readonly where?: string;
}

/** `reader` with `where` said in the errors that name a Secret it lacks (activities/common/secret-key.ts). */
export function namedStore(reader: SecretReader, where: string): SecretReader {
  return { where, read: (namespace, name) => reader.read(namespace, name) };
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
  /**
   * A lease on `name` (a host's) shared by every process using this store: one holder at a time,
   * across API replicas. Throws `LeaseBusy` after `opts.waitMs` while another holds it.
   */
  lease(namespace: string, name: string, opts: LeaseOptions): Promise<Lease>;
}
