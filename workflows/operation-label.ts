/**
 * Operations that run inside the host workflow (patch operations-inline)
 * are told apart in the Temporal UI by their activities' summaries: each
 * activity an operation schedules is labelled with it ("3-provision:
 * deployNode"; workflows/interceptors.ts). The label lives in async-local
 * storage around the operation's call, so what the host schedules beside it
 * (a status write, a power check) is not labelled.
 */
import { AsyncLocalStorage } from '@temporalio/workflow';

const storage = new AsyncLocalStorage<string>();

/** Runs an operation with its label (`<seq>-<kind>`). */
export const withOperationLabel = <T>(label: string, fn: () => Promise<T>): Promise<T> => storage.run(label, fn);

export const operationLabel = (): string | undefined => storage.getStore();
