/**
 * The worker and controller processes the tests spawn, built once per run into one ES module each.
 *
 * `node --import tsx workers/main.ts` (what the container runs) transpiles and loads some 300 TypeScript
 * modules at every start: about 3.5 s of CPU a process, and a run starts some 80 of them. The global setup
 * bundles each entry point with esbuild instead (our modules and @kubernetes/client-node; the other packages stay imports of node_modules),
 * and the tests start `node <bundle>`: the same code, loaded in about 0.6 s. Without tsx too: its loader
 * hooks see every module the bundle imports from node_modules, and registering them cost a worker's start
 * about 3 CPU-s of its 6 (a controller's 2.5 of 5, measured alone); the bundle loads no `.ts` file at run time
 * (its dynamic imports are of packages, or bundled).
 *
 * Without source maps unless METALFLOW_TEST_SOURCE_MAPS=1: with `--enable-source-maps` Node reads the source map
 * of every module it loads (the bundle's inline one and each package's `.js.map`) and parses the bundle's whole
 * map at the first stack trace, about 0.3-0.6 CPU-s of a worker's 3-4 at start. A stack trace then names the
 * bundle's lines (`.state/test-worker.mjs:1234`), under the `// workers/...` comment of the module they come from.
 * METALFLOW_TEST_CPU_PROF_DIR=DIR starts each with `--cpu-prof` into DIR (the shim then stops them with SIGTERM,
 * as a profile is written at exit).
 *
 * The bundles live one folder below the repository root (`.state/`), where the modules that find their
 * files from `import.meta.url` (config/env.ts's REPO_ROOT, workers/worker.ts's workflow paths) resolve them as
 * from `workers/` or `k8s/`. Without a bundle (a run with METALFLOW_TEST_NO_STACK=1 builds none) a test
 * starts the TypeScript entry point.
 */
import { existsSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { REPO_ROOT } from '../../config/env';

const ENTRY_POINTS = {
  worker: join('workers', 'main.ts'),
  controller: join('k8s', 'controller', 'main.ts'),
} as const;

export type ProcessKind = keyof typeof ENTRY_POINTS;

const bundlePath = (kind: ProcessKind): string => join(REPO_ROOT, '.state', `test-${kind}.mjs`);

const SOURCE_MAPS = process.env.METALFLOW_TEST_SOURCE_MAPS === '1';

/** Every bare import (a package, a `node:` module) left external but those of the packages bundled in. */
const BUNDLED_PACKAGES: Plugin = {
  name: 'external-packages',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => (args.path === '@kubernetes/client-node' || args.path.startsWith('@kubernetes/client-node/') ? undefined : { path: args.path, external: true }));
  },
};

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
        // Packages stay imports of node_modules, all but @kubernetes/client-node: an ES module package of some
        // 960 files (its generated API models) that Node resolves, reads, compiles and links one by one, about
        // 0.9 CPU-s of every worker's and controller's start; bundled, it is one script (and 0.1 s of the build).
        // Its own dependencies stay imports (none of them is installed below it, so they resolve the same).
        plugins: [BUNDLED_PACKAGES],
        outfile: tmp,
        logLevel: 'warning',
        ...(SOURCE_MAPS ? { sourcemap: 'inline' as const } : {}),
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

/** The arguments for `node` that start a worker or a controller: the run's bundle, or the TypeScript entry point (through tsx). */
export function processArgs(kind: ProcessKind): string[] {
  const bundle = bundlePath(kind);
  const prof = process.env.METALFLOW_TEST_CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.METALFLOW_TEST_CPU_PROF_DIR}`] : [];
  return existsSync(bundle) ? [...prof, ...(SOURCE_MAPS ? ['--enable-source-maps'] : []), bundle] : [...prof, '--import', 'tsx', join(REPO_ROOT, ENTRY_POINTS[kind])];
}
