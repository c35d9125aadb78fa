/**
 * A node Ironic keeps locked, reported instead of waited on in silence.
 *
 * Ironic answers a change to a node another action holds with 409 NodeLocked,
 * after trying to take the lock for about 3 s itself (`[conductor]
 * node_locked_retry_attempts` × `node_locked_retry_interval`, past which it
 * logs that the "normal maximum time window" is exceeded). Activities wait
 * such a lock out, as the action holding it ends. But a request that failed
 * inside Ironic (a `database is locked` 500 from its SQLite under load) can
 * leave the node's `reservation` set, and nothing in Ironic clears the
 * reservation of a conductor that is still running: every change is then
 * refused for good, and a host waiting on it looks busy with no error.
 *
 * So a run of NodeLocked answers longer than the limit ends the operation with
 * a failure that names the node, the conductor holding it and for how long;
 * the host records it in its status and tries again after its backoff (a
 * reservation released meanwhile lets the next attempt through). The limit
 * leaves room for an action a slow BMC makes long: a power change's or a
 * virtual media insert's tens of seconds hold the lock while they run.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { FAILURE } from '../../model/failures';
import type { IronicClient, IronicError } from '../../clients/ironic/client';

/** How long a node may stay locked against this activity's changes before the operation fails naming the lock. */
export const NODE_LOCK_LIMIT_MS = 5 * 60_000;

export interface LockWatch {
  /**
   * A NodeLocked answer: starts the run, or, once the run is longer than the limit, reads who holds the node and
   * throws the operation's failure (unless the read finds the node released: the run starts again).
   */
  locked(err: IronicError): Promise<void>;
  /** Ironic took a change: the node was not locked then. */
  clear(): void;
}

const duration = (ms: number): string => {
  const s = Math.round(ms / 1000);
  return s < 120 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
};

/** The failure of an operation whose node Ironic kept locked for `lockedMs`; `reservation`: the holder Ironic names. */
export function nodeLockedFailure(nodeId: string, reservation: string, lockedMs: number, last: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    `Ironic node ${nodeId} has been locked by conductor "${reservation}" for ${duration(lockedMs)}: every change to it was ` +
      `answered 409 (the last: ${last}). Ironic's own actions hold a node for seconds; a lock this long is a reservation ` +
      `left behind by a request that failed inside Ironic (its log says why), which only a restart of that conductor ` +
      `releases. The host tries again after its backoff.`,
    FAILURE.operationFailed,
    { nodeId, reservation, lockedSeconds: Math.round(lockedMs / 1000) },
  );
}

export function lockWatch(ironic: IronicClient, nodeId: string, limitMs: number = NODE_LOCK_LIMIT_MS): LockWatch {
  let since: number | undefined;
  return {
    async locked(err) {
      const now = Date.now();
      since ??= now;
      if (now - since < limitMs) return;
      let node: { reservation: string | null } | undefined;
      try {
        node = await ironic.getNodeState(nodeId, ['reservation']);
      } catch {
        // Ironic too busy to answer says nothing of the lock: the change is tried again, the next 409 reads again.
        return;
      }
      // Released since its last answer (or gone: the next read says so): the change is tried again.
      if (!node?.reservation) {
        since = undefined;
        return;
      }
      throw nodeLockedFailure(nodeId, node.reservation, now - since, err.message);
    },
    clear() {
      since = undefined;
    },
  };
}
