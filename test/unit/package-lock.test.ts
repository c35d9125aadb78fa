import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';

interface LockEntry { optionalDependencies?: Record<string, string> }
const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { packageManager?: string };

/** Where npm looks a dependency of the package at `at` up: its own node_modules, then each parent's. */
function resolves(at: string, name: string): boolean {
  let dir = at;
  for (;;) {
    if (lock.packages[`${dir ? `${dir}/` : ''}node_modules/${name}`]) return true;
    if (dir === '') return false;
    const i = dir.lastIndexOf('/node_modules/');
    dir = i < 0 ? '' : dir.slice(0, i);
  }
}

describe('package-lock.json', () => {
  it('lists every optional dependency for every platform, so npm ci accepts it on any machine', () => {
    const missing = Object.entries(lock.packages).flatMap(([at, entry]) =>
      Object.keys(entry.optionalDependencies ?? {}).filter((name) => !resolves(at, name)).map((name) => `${at || '(root)'} -> ${name}`));
    expect(missing).toEqual([]);
  });

  it('names the npm it was written with', () => {
    expect(pkg.packageManager).toMatch(/^npm@\d+\.\d+\.\d+$/);
  });
});
