/**
 * The closed set of failure `type`s shared by activities (which throw them)
 * and workflows (which branch on them). Each peer's client throws typed errors
 * of its own and says where they fall in this set (`…FailureClass` next to
 * each client's error type); activities/common/failures.ts turns that into the
 * Temporal failure, once. An operation failure is the host's fault or the
 * hardware's and is recorded in status; `Transient` is retried quietly.
 */
export const FAILURE = {
  /**
   * The operation cannot succeed as asked: Ironic reports it failed (`deploy failed` with last_error), or a BMC
   * refuses it (wrong credentials, no such system, not supported, a failed BMC task); the details name the BMC error `kind`.
   */
  operationFailed: 'OperationFailed',
  /** A referenced secret or key is missing or unreadable. */
  secretMissing: 'SecretMissing',
  /** The server speaks an Ironic API too old for what we use. */
  ironicTooOld: 'IronicTooOld',
  /** Ironic refused the request: invalid (HTTP 400), or a 409 its node's state or settings forbid (not a locked node): retrying cannot help. */
  ironicRejected: 'IronicRejected',
  /** A peer or the network failed in a way that may pass (5xx, 409 node locked, 429, refused, timeouts). */
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
  /** A bug or a peer's answer metalflow cannot read (a TypeError, a success whose body is not JSON or lacks what it must hold): retrying gets the same. */
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

/**
 * Where a peer's error falls in the closed set: what each client's mapping
 * returns (no Temporal types in clients/), and the activity layer throws as
 * a Temporal failure (activities/common/failures.ts).
 */
export interface FailureClass {
  type: FailureType;
  retryable: boolean;
  /** Replaces the error's own message when the failure says more (e.g. "node gone"). */
  message?: string;
  /** Small, secret-free facts for the workflow or an operator (the BMC error kind, the image error type, the lost node). */
  details?: Record<string, unknown>;
}
