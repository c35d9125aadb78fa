/**
 * An API server's error answer. Its own module so that activities can branch
 * on it without loading @kubernetes/client-node in a worker that has no
 * Kubernetes mode.
 */
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
