/**
 * The host names and Kubernetes namespaces a test file made, for what cleans up after it
 * (test/support/ironic-cleanup.ts). Kept on globalThis: with `isolate: false` the files of one fork share modules.
 */
const KEY = Symbol.for('metalflow.fileNames');
interface Recorded {
  names: Set<string>;
  namespaces: Set<string>;
}
const g = globalThis as { [KEY]?: Recorded };
const recorded = (): Recorded => (g[KEY] ??= { names: new Set(), namespaces: new Set() });

export const recordName = (name: string): void => void recorded().names.add(name);
export const recordNamespace = (ns: string): void => void recorded().namespaces.add(ns);

/** What was recorded since the last take, emptied. */
export function takeFileNames(): Recorded {
  const r = recorded();
  g[KEY] = { names: new Set(), namespaces: new Set() };
  return r;
}
