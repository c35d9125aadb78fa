/**
 * One abort signal per reconcile, tied to the leadership's. The Temporal
 * client adds an abort listener to the signal of every call it makes and never
 * removes it (@temporalio/client 1.24, Connection.withAbortSignal), so calls
 * made straight under the leadership's signal would pile listeners onto it for
 * as long as the replica leads. A reconcile's own signal goes with the
 * reconcile, and so do the listeners on it.
 */
import { setMaxListeners } from 'node:events';

/** A reconcile makes a handful of Temporal calls, each adding its listener: Node warns past 10. */
const CALLS_PER_RECONCILE = 100;

export async function withReconcileSignal<T>(leading: AbortSignal, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const own = new AbortController();
  setMaxListeners(CALLS_PER_RECONCILE, own.signal);
  const onLoss = (): void => own.abort(leading.reason);
  if (leading.aborted) onLoss();
  else leading.addEventListener('abort', onLoss, { once: true });
  try {
    return await fn(own.signal);
  } finally {
    leading.removeEventListener('abort', onLoss);
  }
}
