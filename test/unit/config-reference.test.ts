/**
 * The configuration reference (docs/configuration.md, generated from
 * config/settings.ts) against the code: the generated section is current,
 * every variable the processes read is in the table, every variable in the
 * table is read somewhere, and the defaults the table states for
 * config/env.ts are what loadConfig gives with nothing set.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, REPO_ROOT } from '../../config/env';
import { SETTINGS, settingNames } from '../../config/settings';
import { CONFIG_DOC, withReference } from '../../scripts/docs/config-reference';

/** Where the processes read their environment. */
const PROCESS_DIRS = ['config', 'api', 'workers', 'k8s', 'clients', 'control', 'activities'];
/** Where the scripts that start the stack, the demo and the tests read theirs. */
const SCRIPT_PLACES = ['scripts', 'Makefile', 'package.json'];
/** Constants in the code that look like variables. */
const NOT_VARIABLES = new Set(['IRONIC_NODE_NAME_MAX', 'TEMPORAL_UNSUPPORTED']);
const VARIABLE = /\b(?:METALFLOW|TEMPORAL|IRONIC)_[A-Z0-9_]*[A-Z0-9]\b/g;

function files(path: string, ext: RegExp): string[] {
  const full = join(REPO_ROOT, path);
  if (!statSync(full).isDirectory()) return [full];
  return readdirSync(full, { recursive: true, encoding: 'utf8' })
    .filter((f) => ext.test(f) && !f.includes('node_modules'))
    .map((f) => join(full, f))
    .filter((f) => statSync(f).isFile());
}

const read = (paths: string[]): Map<string, string> => new Map(paths.map((p) => [relative(REPO_ROOT, p), readFileSync(p, 'utf8')]));

describe('configuration reference', () => {
  it('docs/configuration.md holds the generated reference as config/settings.ts renders it (npm run docs:config)', () => {
    const doc = readFileSync(join(REPO_ROOT, CONFIG_DOC), 'utf8');
    expect(doc).toBe(withReference(doc));
  });

  it('every variable the processes read is documented', () => {
    const documented = settingNames();
    const missing = new Map<string, string>();
    for (const [file, text] of read(PROCESS_DIRS.flatMap((d) => files(d, /\.ts$/)))) {
      if (file === join('config', 'settings.ts')) continue;
      for (const name of text.match(VARIABLE) ?? []) {
        if (!documented.has(name) && !NOT_VARIABLES.has(name) && !missing.has(name)) missing.set(name, file);
      }
    }
    expect(Object.fromEntries(missing), 'add these to config/settings.ts, then npm run docs:config').toEqual({});
  });

  it('every documented variable is read somewhere', () => {
    const code = [...read([...PROCESS_DIRS.flatMap((d) => files(d, /\.ts$/)), ...SCRIPT_PLACES.flatMap((d) => files(d, /\.(ts|sh|mjs|json)$|^[^.]+$/))]).values()].join('\n');
    const unread = [...settingNames()].filter((name) => !new RegExp(`\\b${name}\\b`).test(code));
    expect(unread, 'documented in config/settings.ts but read nowhere').toEqual([]);
  });

  it('the defaults it states are what config/env.ts gives with nothing set', () => {
    const config = loadConfig({}) as unknown as Record<string, unknown>;
    const at = (path: string): unknown => path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], config);
    const checks = SETTINGS.filter((s) => s.check);
    expect(checks.length).toBeGreaterThan(10);
    for (const s of checks) expect(at(s.check!.path), s.names.join(', ')).toEqual(s.check!.value);
  });

  it('every stated default that is a number matches the check beside it', () => {
    for (const s of SETTINGS.filter((x) => typeof x.check?.value === 'number')) {
      expect(s.default.split(/[ ,]/)).toContain(String(s.check!.value));
    }
  });
});
