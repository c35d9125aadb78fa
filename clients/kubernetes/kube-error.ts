/**
 * An API server's error answer, and the one reading of its status that
 * activities and the controller share. Its own module so that activities can
 * branch on it without loading @kubernetes/client-node in a worker that has no
 * Kubernetes mode.
 */
import { FAILURE, type FailureClass } from '../../model/failures';

export class KubeError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason?: string,
  ) {
    super(message);
    this.name = 'KubeError';
  }
}

/**
 * What an API server's answer means for the caller:
 * `not-found` (404) and `conflict` (409: a resourceVersion that moved on, a
 * name taken) are for the caller to handle; `throttled` (429) and
 * `unavailable` (5xx, or any status outside 4xx) may pass; `rejected` is
 * every other 4xx (invalid, forbidden, unauthorized, gone): sending the same
 * again gets the same.
 */
export type KubeErrorKind = 'not-found' | 'conflict' | 'throttled' | 'rejected' | 'unavailable';

export function kubeErrorKind(status: number): KubeErrorKind {
  if (status === 404) return 'not-found';
  if (status === 409) return 'conflict';
  if (status === 429) return 'throttled';
  if (status >= 400 && status < 500) return 'rejected';
  return 'unavailable';
}

/** `err` is the API server's answer of this kind (anything else, a network failure included, is not). */
export const isKubeError = (err: unknown, kind: KubeErrorKind): err is KubeError => err instanceof KubeError && kubeErrorKind(err.status) === kind;

/**
 * A Kubernetes error in the closed set the workflows branch on: a refusal is
 * final (KubernetesRejected); a 404 on a write is one too (what it writes
 * to is gone); a conflict, throttling or an unavailable server is retried.
 */
export function kubeFailureClass(err: KubeError): FailureClass {
  const kind = kubeErrorKind(err.status);
  if (kind === 'rejected' || kind === 'not-found') return { type: FAILURE.kubernetesRejected, retryable: false, details: { status: err.status } };
  return { type: FAILURE.transient, retryable: true, details: { status: err.status } };
}
