/**
 * Workflows of test/integration/operation-label-storage.test.ts, bundled with
 * the worker's own preload options. Each probe stays cached and answers a
 * query with the number of symbol-keyed properties of a promise made in
 * workflow code: on Node 20 every enabled AsyncLocalStorage writes one such
 * property on every promise of the thread.
 */
import { AsyncLocalStorage, condition, defineQuery, setHandler } from '@temporalio/workflow';
import { operationLabel, withOperationLabel } from '../../workflows/host/operation-label';

export const promiseSymbolsQuery = defineQuery<{ symbols: number; label: string | null }>('promiseSymbols');

/**
 * `own: false` labels an operation as the host workflow does; `own: true` runs a storage of its own
 * instead (what operation-label.ts did per workflow before it was preloaded): the test's control.
 */
export async function labelProbeWorkflow(label: string, own: boolean): Promise<void> {
  let seen: string | null = null;
  if (own) {
    const storage = new AsyncLocalStorage<string>();
    await storage.run(label, async () => {
      seen = storage.getStore() ?? null;
    });
  } else {
    await withOperationLabel(label, async () => {
      seen = operationLabel() ?? null;
    });
  }
  setHandler(promiseSymbolsQuery, () => ({ symbols: Object.getOwnPropertySymbols(Promise.resolve()).length, label: seen }));
  await condition(() => false);
}
