/**
 * Operations that run inside the host workflow
 * are told apart in the Temporal UI by their activities' summaries: each
 * activity an operation schedules is labelled with it ("3-provision:
 * deployNode"; workflows/common/interceptors.ts). The label lives in async-local
 * storage around the operation's call, so what the host schedules beside it
 * (a status write, a power check) is not labelled.
 *
 * One storage for every workflow of the worker: this module is preloaded
 * into the shared V8 context (workers/worker.ts WORKFLOW_PRELOAD_MODULES).
 * On Node 20 every enabled AsyncLocalStorage writes a property on every
 * promise the thread creates, so a storage per cached workflow made each
 * workflow promise carry one property per cached workflow and copy them all
 * at creation: memory and CPU grew with the square of the cache (at 400
 * cached hosts a pending promise held a 19 KB property table, 420 MB of the
 * workflow thread's 510 MB live heap; docs/benchmarks.md). A label is only
 * read inside the activation that runs the operation's code, and activations
 * run one at a time, so one storage keeps workflows apart as well as one
 * each. Not imported from @temporalio/workflow (a preloaded module must not
 * share the SDK's per-workflow state): the sandbox's own class is a global
 * there; outside a sandbox (plain Node) nothing is ever labelled.
 */
interface LabelStorage {
  run<R>(store: string, fn: () => R): R;
  getStore(): string | undefined;
}

const SandboxStorage = (globalThis as { AsyncLocalStorage?: new () => LabelStorage }).AsyncLocalStorage;

/** Kept private: the SDK deep-freezes a preloaded module's exports, and a frozen storage could not enable itself. */
const storage: LabelStorage = SandboxStorage ? new SandboxStorage() : { run: (_store, fn) => fn(), getStore: () => undefined };

/** Runs an operation with its label (`<seq>-<kind>`). */
export const withOperationLabel = <T>(label: string, fn: () => Promise<T>): Promise<T> => storage.run(label, fn);

export const operationLabel = (): string | undefined => storage.getStore();
