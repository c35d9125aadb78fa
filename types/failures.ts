/**
 * Failure `type`s shared by activities (which throw them) and workflows (which
 * branch on them). An operation failure is the host's fault or the hardware's
 * and is recorded in status; anything else is transient and retried quietly.
 */
export const FAILURE = {
  /** Ironic reports the operation failed (e.g. `deploy failed` with last_error). */
  operationFailed: 'OperationFailed',
  /** A referenced secret or key is missing or unreadable. */
  secretMissing: 'SecretMissing',
  /** The server speaks an Ironic API too old for what we use. */
  ironicTooOld: 'IronicTooOld',
  /** The request was refused as invalid by Ironic (HTTP 400): retrying cannot help. */
  ironicRejected: 'IronicRejected',
  /** Ironic or the network failed in a way that may pass (5xx, 409 locked, timeouts). */
  transient: 'Transient',
  /**
   * The host's Ironic node no longer exists (Ironic lost it, e.g. its database
   * was emptied): the host registers again in place, adopting a provisioned node.
   */
  nodeGone: 'IronicNodeGone',
  /** The image (or its checksum file) cannot be deployed: not found, an HTML page, the wrong format, TLS… (clients/images/). */
  imageUnusable: 'ImageUnusable',
  /** A DHCP reservation cannot be made: invalid, a MAC or address held by another host, an unknown site, a foreign file (clients/dnsmasq/). */
  dhcpUnusable: 'DhcpUnusable',
  /** The Kubernetes API server refused a write as invalid or forbidden (4xx but 409 and 429): retrying cannot help. */
  kubernetesRejected: 'KubernetesRejected',
  /** A bug or a peer's answer metalflow cannot read (a TypeError, a success whose body is not JSON): retrying gets the same. */
  internal: 'InternalError',
  /** A Kubernetes-mode host's status write reached a worker with no API server configured: retrying on it cannot help. */
  kubernetesNotConfigured: 'KubernetesNotConfigured',
} as const;

export type FailureType = (typeof FAILURE)[keyof typeof FAILURE];

/** Failures that end an operation at once; everything else is retried by the activity retry policy. */
export const NON_RETRYABLE_FAILURES: string[] = [
  FAILURE.operationFailed,
  FAILURE.secretMissing,
  FAILURE.ironicTooOld,
  FAILURE.ironicRejected,
  FAILURE.nodeGone,
  FAILURE.kubernetesRejected,
  FAILURE.internal,
];
