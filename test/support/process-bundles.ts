/**
 * The worker and controller processes the tests spawn, built once per run into one ES module each.
 *
 * `node --import tsx workers/main.ts` (what the container runs) transpiles and loads some 300 TypeScript
 * modules at every start: about 3.5 s of CPU a process, and a run starts some 80 of them. The global setup
 * bundles each entry point with esbuild instead (our modules only; packages stay imports of node_modules),
 * and the tests start `node --import tsx <bundle>`: the same code, loaded in about 0.6 s. tsx stays
 * registered for anything that still loads a `.ts` file at run time.
 *
 * The bundles live one folder below the repository root (`.state/`), where the modules that find their
 * files from `import.meta.url` (config/env.ts's REPO_ROOT, workers/worker.ts's workflow paths) resolve them as
 * from `workers/` or `k8s/`. Without a bundle (a run with METALFLOW_TEST_NO_STACK=1 builds none) a test
 * starts the TypeScript entry point.
 */
import { existsSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { REPO_ROOT } from '../../config/env';

const ENTRY_POINTS = {
  worker: join('workers', 'main.ts'),
  controller: join('k8s', 'controller', 'main.ts'),
} as const;

export type ProcessKind = keyof typeof ENTRY_POINTS;

const bundlePath = (kind: ProcessKind): string => join(REPO_ROOT, '.state', `test-${kind}.mjs`);

/** Builds both bundles (a second or two); renamed into place, as another run in this checkout may be starting one. */
export async function buildProcessBundles(): Promise<void> {
  await Promise.all(
    (Object.keys(ENTRY_POINTS) as ProcessKind[]).map(async (kind) => {
      const out = bundlePath(kind);
      const tmp = `${out}.${process.pid}.mjs`;
      await build({
        entryPoints: [join(REPO_ROOT, ENTRY_POINTS[kind])],
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        packages: 'external',
        outfile: tmp,
        logLevel: 'warning',
        sourcemap: 'inline',
      });
      renameSync(tmp, out);
    }),
  );
}

/** The run's bundle of a worker's or a controller's entry point, when the global setup built one. */
export function processBundle(kind: ProcessKind): string | undefined {
  const bundle = bundlePath(kind);
  return existsSync(bundle) ? bundle : undefined;
}

/** The arguments for `node` that start a worker or a controller: the run's bundle, or the TypeScript entry point. */
export function processArgs(kind: ProcessKind): string[] {
  const bundle = bundlePath(kind);
  return ['--import', 'tsx', ...(existsSync(bundle) ? ['--enable-source-maps', bundle] : [join(REPO_ROOT, ENTRY_POINTS[kind])])];
}
