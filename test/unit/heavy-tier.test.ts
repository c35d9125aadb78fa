/** A file taken out of `make test` still runs somewhere: `npm run test:heavy` names it. */
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import { HEAVY_ONLY_FILES } from '../support/heavy';

const heavyScript = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts['test:heavy']!;
const named = heavyScript.split(/\s+/).filter((w) => w.startsWith('test/'));

describe('the heavy tier', () => {
  it.each(HEAVY_ONLY_FILES)('runs %s', (file) => {
    expect(existsSync(join(REPO_ROOT, file)), `${file} exists`).toBe(true);
    expect(named.some((n) => file === n || (n.endsWith('/') && file.startsWith(n))), `npm run test:heavy names ${file}`).toBe(true);
  });
});
